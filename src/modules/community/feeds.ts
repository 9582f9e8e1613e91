import { and, arrayContains, desc, eq, notInArray, sql, type SQL } from 'drizzle-orm';
import { communityFollows, communityPostScores, communityPosts } from '../../db/schema/community.js';
import { badRequest } from '../../platform/http/errors.js';
import { afterCursor, decodeCursor, toPage } from '../../platform/http/pagination.js';
import { maySee, visibleTo, type Author } from './audience.js';
import type { CommunityDeps } from './deps.js';
import { createTrendingRecompute } from './trending.js';
import { LISTED, currentEpoch, currentScoreSql, likedSql, scoreColumn, type PostExtras, type PostRow, type PostView, type PostViews } from './views.js';

export interface FeedQuery {
  limit: number;
  cursor?: string;
  tag?: string;
}

export interface FeedPage {
  items: PostView[];
  nextCursor: string | null;
}

export function createFeeds(deps: CommunityDeps, views: PostViews) {
  const { db, blocks } = deps;

  /** Posts whose author's audience includes the viewer (see audience.ts). */
  const seenBy = (viewerId: string | null) => visibleTo(viewerId, communityPosts.authorVisibility, communityPosts.authorId);

  /** Authors the viewer must not see (blocked or muted by them, or blocking them). */
  const hiddenFor = async (viewerId: string | null): Promise<string[]> => (viewerId ? blocks.hiddenUserIds(viewerId) : []);
  const withoutHidden = (hidden: string[]): SQL | undefined => (hidden.length > 0 ? notInArray(communityPosts.authorId, hidden) : undefined);

  /** A newest-first page of listed posts matching `where`, with each post's current score and the viewer's like. */
  async function newestFirst(where: SQL | undefined, query: FeedQuery, viewerId: string | null, hidden: string[]): Promise<FeedPage> {
    const found = await db
      .select({ post: communityPosts, score: currentScoreSql(), likedByMe: likedSql(viewerId, communityPosts.id) })
      .from(communityPosts)
      .leftJoin(communityPostScores, eq(communityPostScores.postId, communityPosts.id))
      .where(afterCursor(communityPosts.publishedAt, communityPosts.id, query.cursor, and(LISTED, where, seenBy(viewerId))))
      .orderBy(desc(communityPosts.publishedAt), desc(communityPosts.id))
      .limit(query.limit + 1);
    return render(found, query.limit, viewerId, hidden, (p) => ({ sort: p.publishedAt.toISOString(), id: p.id }));
  }

  async function render(
    found: Array<PostExtras & { post: PostRow }>,
    limit: number,
    viewerId: string | null,
    hidden: string[],
    positionOf: (p: PostRow) => { sort: string | number; id: string },
  ) {
    const page = toPage(
      found.map((f) => f.post),
      limit,
      positionOf,
    );
    const extras = new Map(found.map((f) => [f.post.id, { score: f.score, likedByMe: f.likedByMe }]));
    return { items: await views(page.items, viewerId, { extras, hidden }), nextCursor: page.nextCursor };
  }

  return {
    /** Newest first; `tag` keeps the posts carrying that hashtag. */
    async recent(query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const tag = query.tag?.trim().replace(/^#+/, '').toLowerCase();
      const hidden = await hiddenFor(viewerId);
      return newestFirst(and(withoutHidden(hidden), tag ? arrayContains(communityPosts.tags, [tag]) : undefined), query, viewerId, hidden);
    },

    /**
     * Posts of the accounts the viewer follows (empty when following nobody). Planned as a merge of per-author pages:
     * for each followee, the keys (published_at, id) of its newest `limit + 1` posts after the cursor, read from the
     * author index alone (index-only), then the newest of those, then those posts by primary key. The cost grows with
     * the number of followees, never with the size of the whole feed (the planner's own choice, a walk of the recent
     * index probing the follows, read ~10k rows for a viewer following 200 of 100k authors; fetching whole rows per
     * followee cost ~2,000 random heap reads). A PRIVATE followee's posts are left out by followee, not by row: every
     * listed post of an author carries the author's current audience (set at publish, updated with the preference), so
     * one probe of the author index tells, where a row filter in the per-author page would read every post of a PRIVATE
     * followee to find none. FOLLOWERS_ONLY followees are shown: the viewer follows them.
     */
    async following(query: FeedQuery, viewerId: string): Promise<FeedPage> {
      const hidden = await hiddenFor(viewerId);
      const followeeAudience = sql`(select ${communityPosts.authorVisibility} from ${communityPosts} where ${communityPosts.authorId} = ${communityFollows.followeeId} and ${LISTED} limit 1)`;
      const perAuthor = db
        .select({ id: communityPosts.id, publishedAt: communityPosts.publishedAt })
        .from(communityPosts)
        .where(afterCursor(communityPosts.publishedAt, communityPosts.id, query.cursor, and(LISTED, eq(communityPosts.authorId, communityFollows.followeeId))))
        .orderBy(desc(communityPosts.publishedAt), desc(communityPosts.id))
        .limit(query.limit + 1)
        .as('candidates');
      const newest = db
        .select({ id: perAuthor.id })
        .from(communityFollows)
        .innerJoinLateral(perAuthor, sql`true`)
        .where(
          and(
            eq(communityFollows.followerId, viewerId),
            hidden.length > 0 ? notInArray(communityFollows.followeeId, hidden) : undefined,
            sql`${followeeAudience} <> 'PRIVATE'`,
          ),
        )
        .orderBy(desc(perAuthor.publishedAt), desc(perAuthor.id))
        .limit(query.limit + 1)
        .as('newest');
      const found = await db
        .select({ post: communityPosts, score: currentScoreSql(), likedByMe: likedSql(viewerId, communityPosts.id) })
        .from(newest)
        .innerJoin(communityPosts, eq(communityPosts.id, newest.id))
        .leftJoin(communityPostScores, eq(communityPostScores.postId, communityPosts.id))
        .orderBy(desc(communityPosts.publishedAt), desc(communityPosts.id));
      return render(found, query.limit, viewerId, hidden, (p) => ({ sort: p.publishedAt.toISOString(), id: p.id }));
    },

    /**
     * One user's posts (404 for an unknown handle; empty when the viewer blocked or muted them, or is not in the
     * author's audience: decided once here, so the author index is not walked for rows the filter would all drop).
     */
    async byAuthor(author: Author, query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const hidden = await hiddenFor(viewerId);
      if (hidden.includes(author.id) || !(await maySee(db, viewerId, author))) return { items: [], nextCursor: null };
      return newestFirst(eq(communityPosts.authorId, author.id), query, viewerId, hidden);
    },

    /** Posts made from this one, newest first. */
    async remixesOf(postId: string, query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const hidden = await hiddenFor(viewerId);
      return newestFirst(and(eq(communityPosts.remixOfPostId, postId), withoutHidden(hidden)), query, viewerId, hidden);
    },

    /**
     * Highest stored score first. The cursor carries the epoch its scores belong to; the previous epoch's column is
     * intact until the next recompute, so a reader paging across one recompute still sees every row exactly once.
     */
    async trending(query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const [epochNow, hidden] = await Promise.all([currentEpoch(db), hiddenFor(viewerId)]);
      let epoch = epochNow;
      let after: SQL | undefined;
      if (query.cursor) {
        const position = decodeCursor(query.cursor);
        const [cursorEpoch, score] = String(position.sort).split('|').map(Number) as [number, number];
        if (!Number.isInteger(cursorEpoch) || !Number.isFinite(score)) throw badRequest('The cursor is not valid. Use the nextCursor value from the previous page, or omit it to start over.');
        if (cursorEpoch < epochNow - 1 || cursorEpoch > epochNow) {
          throw badRequest('The trending feed was recomputed twice since this cursor was issued. Start again without a cursor.', { field: 'query.cursor' });
        }
        epoch = cursorEpoch;
        after = sql`(${scoreColumn(epoch)}, ${communityPostScores.postId}) < (${score}::double precision, ${position.id}::uuid)`;
      }
      const column = scoreColumn(epoch);
      // Walk the score index (hidden authors left out on the narrow table), join each candidate to its post.
      const found = await db
        .select({ post: communityPosts, ordered: column, score: currentScoreSql(), likedByMe: likedSql(viewerId, communityPosts.id) })
        .from(communityPostScores)
        .innerJoin(communityPosts, eq(communityPosts.id, communityPostScores.postId))
        .where(and(LISTED, hidden.length > 0 ? notInArray(communityPostScores.authorId, hidden) : undefined, seenBy(viewerId), after))
        .orderBy(desc(column), desc(communityPostScores.postId))
        .limit(query.limit + 1);
      // The cursor carries the score the page was ordered by (its epoch's); the Post shows the current epoch's.
      const ordered = new Map(found.map((r) => [r.post.id, r.ordered]));
      return render(found, query.limit, viewerId, hidden, (p) => ({ sort: `${epoch}|${ordered.get(p.id)}`, id: p.id }));
    },

    /** Recomputes the trending scores into the next epoch (see trending.ts). */
    recomputeTrending: createTrendingRecompute(deps),
  };
}

export type Feeds = ReturnType<typeof createFeeds>;
