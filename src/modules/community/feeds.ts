import { runBound, type NamedStatement } from '../../platform/db/bound.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { badRequest } from '../../platform/http/errors.js';
import { decodeCursor, toPage } from '../../platform/http/pagination.js';
import { maySee, type Author } from './audience.js';
import type { CommunityDeps } from './deps.js';
import { followingStatement, newestFirstStatement, toPageRow, trendingStatement, type NewestFilter, type PageRow, type PostRow } from './post-statements.js';
import { createTrendingRecompute } from './trending.js';
import { currentEpoch, type PostView, type PostViews } from './views.js';

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

  /**
   * The trending epoch in force, kept by each instance: it moves once per recompute, which tells every instance. One
   * that hears late orders by the previous epoch's column, which stays intact until the next recompute.
   */
  const epochs = createInvalidatingCache<number>({ name: 'trending_epoch', bus: deps.events, load: () => currentEpoch(db) });
  const trendingEpoch = { current: () => epochs.get('current'), moved: () => epochs.changed('current') };

  /** Authors the viewer must not see (blocked or muted by them, or blocking them). */
  const hiddenFor = async (viewerId: string | null): Promise<string[]> => (viewerId ? blocks.hiddenUserIds(viewerId) : []);

  const pageRows = async (statement: NamedStatement, values: Record<string, unknown>): Promise<PageRow[]> =>
    (await runBound(db, statement.bind(values))).rows.map(toPageRow);

  /** The viewer's part of a page statement's values, and the keyset position after the cursor (newest first). */
  const viewerValues = (viewerId: string | null, hidden: string[], limit: number) =>
    viewerId ? { viewer: viewerId, hidden, limit: limit + 1 } : { limit: limit + 1 };
  const newestCursor = (cursor: string | undefined) => {
    if (!cursor) return {};
    const position = decodeCursor(cursor);
    const at = new Date(String(position.sort));
    if (Number.isNaN(at.getTime())) throw badRequest('The cursor is not valid.');
    return { cursorAt: at.toISOString(), cursorId: position.id };
  };

  /** A newest-first page of listed posts kept by `filter` (its value in `filterValue`), with scores and the viewer's likes. */
  async function newestFirst(
    filter: NewestFilter,
    filterValue: Record<string, unknown>,
    query: FeedQuery,
    viewerId: string | null,
    hidden: string[],
  ): Promise<FeedPage> {
    const found = await pageRows(newestFirstStatement(filter, viewerId !== null, query.cursor !== undefined), {
      ...viewerValues(viewerId, hidden, query.limit),
      ...filterValue,
      ...newestCursor(query.cursor),
    });
    return render(found, query.limit, viewerId, hidden, (p) => ({ sort: p.publishedAt.toISOString(), id: p.id }));
  }

  async function render(
    found: PageRow[],
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
    const originals = new Map(found.flatMap((f) => (f.original && f.post.remixOfPostId ? [[f.post.remixOfPostId, f.original] as const] : [])));
    return { items: await views(page.items, viewerId, { extras, originals, hidden }), nextCursor: page.nextCursor };
  }

  return {
    /** Newest first; `tag` keeps the posts carrying that hashtag. */
    async recent(query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const tag = query.tag?.trim().replace(/^#+/, '').toLowerCase();
      const hidden = await hiddenFor(viewerId);
      return tag ? newestFirst('tag', { tag }, query, viewerId, hidden) : newestFirst('all', {}, query, viewerId, hidden);
    },

    /**
     * Posts of the accounts the viewer follows (empty when following nobody), as a merge of per-author pages whose cost
     * grows with the number of followees, never with the size of the whole feed. The newest `limit` posts after the
     * cursor come from at most `limit` followees: those whose own newest post after the cursor is among the `limit`
     * newest such posts (every followee ranked above one that contributes has a newer post, and fewer than `limit`
     * posts are newer than any post on the page). So: one probe of the author index per followee for its newest post
     * after the cursor, then the `limit` newest posts of only those `limit` followees (index-only), the newest of those,
     * then their rows by primary key. The planner's own choice, a walk of the recent index probing the follows, read
     * ~10k rows for a viewer following 200 of 100k authors; a page of every followee read 21 entries each. A PRIVATE
     * followee is left out by that first probe: every listed post of an author carries the author's current audience
     * (set at publish, updated with the preference). FOLLOWERS_ONLY followees are shown: the viewer follows them.
     */
    async following(query: FeedQuery, viewerId: string): Promise<FeedPage> {
      const hidden = await hiddenFor(viewerId);
      const found = await pageRows(followingStatement(query.cursor !== undefined), {
        ...viewerValues(viewerId, hidden, query.limit),
        ...newestCursor(query.cursor),
      });
      return render(found, query.limit, viewerId, hidden, (p) => ({ sort: p.publishedAt.toISOString(), id: p.id }));
    },

    /**
     * One user's posts (404 for an unknown handle; empty when the viewer blocked or muted them, or is not in the
     * author's audience: decided once here, so the author index is not walked for rows the filter would all drop).
     */
    async byAuthor(author: Author, query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const hidden = await hiddenFor(viewerId);
      if (hidden.includes(author.id) || !(await maySee(db, viewerId, author))) return { items: [], nextCursor: null };
      return newestFirst('author', { author: author.id }, query, viewerId, hidden);
    },

    /** Posts made from this one, newest first. */
    async remixesOf(postId: string, query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const hidden = await hiddenFor(viewerId);
      return newestFirst('remixes', { original: postId }, query, viewerId, hidden);
    },

    /**
     * Highest stored score first. The cursor carries the epoch its scores belong to; the previous epoch's column is
     * intact until the next recompute, so a reader paging across one recompute still sees every row exactly once.
     */
    async trending(query: FeedQuery, viewerId: string | null): Promise<FeedPage> {
      const [epochNow, hidden] = await Promise.all([trendingEpoch.current(), hiddenFor(viewerId)]);
      let epoch = epochNow;
      let cursor = {};
      if (query.cursor) {
        const position = decodeCursor(query.cursor);
        const [cursorEpoch, score] = String(position.sort).split('|').map(Number) as [number, number];
        if (!Number.isInteger(cursorEpoch) || !Number.isFinite(score))
          throw badRequest('The cursor is not valid. Use the nextCursor value from the previous page, or omit it to start over.');
        if (cursorEpoch < epochNow - 1 || cursorEpoch > epochNow) {
          throw badRequest('The trending feed was recomputed twice since this cursor was issued. Start again without a cursor.', { field: 'query.cursor' });
        }
        epoch = cursorEpoch;
        cursor = { cursorScore: score, cursorId: position.id };
      }
      const column = epoch % 2 === 0 ? 'score_even' : 'score_odd';
      const found = await pageRows(trendingStatement(column, viewerId !== null, query.cursor !== undefined), {
        ...viewerValues(viewerId, hidden, query.limit),
        ...cursor,
      });
      // The cursor carries the score the page was ordered by (its epoch's); the Post shows the current epoch's.
      const ordered = new Map(found.map((r) => [r.post.id, r.ordered]));
      return render(found, query.limit, viewerId, hidden, (p) => ({ sort: `${epoch}|${ordered.get(p.id)}`, id: p.id }));
    },

    /** Recomputes the trending scores into the next epoch (see trending.ts). */
    recomputeTrending: createTrendingRecompute(deps, trendingEpoch),
  };
}

export type Feeds = ReturnType<typeof createFeeds>;
