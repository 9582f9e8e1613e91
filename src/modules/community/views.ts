import { and, eq, inArray, isNull, sql, type AnyColumn } from 'drizzle-orm';
import { communityPostLikes, communityPostScores, communityPosts, communityTrendingState } from '../../db/schema/community.js';
import type { DbOrTx } from '../../platform/db/database.js';
import type { PublicUser } from '../auth/index.js';
import type { GenerationView } from '../library/service.js';
import { authorsSeenBy } from './audience.js';
import type { CommunityDeps } from './deps.js';

export type PostRow = typeof communityPosts.$inferSelect;

/** A post is listed while it is neither deleted by its author nor hidden by moderation (the partial indexes' predicate). */
export const LISTED = and(isNull(communityPosts.deletedAt), isNull(communityPosts.hiddenAt));

export interface AuthorView {
  id: string;
  name: string | null;
  handle: string;
  avatarUrl: string | null;
}

/** A post as clients see it (spec A "Post"). */
export interface PostView {
  id: string;
  caption: string;
  tags: string[];
  likeCount: number;
  commentCount: number;
  viewCount: number;
  shareCount: number;
  remixCount: number;
  remixOf: { id: string; author: AuthorView | null } | null;
  trendingScore: number;
  publishedAt: string;
  author: AuthorView;
  generation: Pick<GenerationView, 'id' | 'kind' | 'prompt' | 'thumbnailUrl' | 'output' | 'model'>;
  likedByMe: boolean;
}

export const toAuthor = (user: Pick<PublicUser, 'id' | 'name' | 'handle' | 'avatarUrl'>): AuthorView => ({
  id: user.id,
  name: user.name,
  handle: user.handle,
  avatarUrl: user.avatarUrl,
});

/** The trending epoch in force (0 before the first recompute) and the score column it reads. */
export async function currentEpoch(tx: DbOrTx): Promise<number> {
  const [row] = await tx.select({ epoch: communityTrendingState.epoch }).from(communityTrendingState).where(eq(communityTrendingState.id, 1));
  return row?.epoch ?? 0;
}

export const scoreColumn = (epoch: number) => (epoch % 2 === 0 ? communityPostScores.scoreEven : communityPostScores.scoreOdd);

const EPOCH = sql`coalesce((select ${communityTrendingState.epoch} from ${communityTrendingState} where ${communityTrendingState.id} = 1), 0)`;

/** The current epoch's score of the joined `community_post_scores` row (0 when none), for a listing's select. */
export const currentScoreSql = () =>
  sql<number>`coalesce(case when ${EPOCH} % 2 = 0 then ${communityPostScores.scoreEven} else ${communityPostScores.scoreOdd} end, 0)`.mapWith(Number);

/** Whether the viewer likes the post whose id is `postId`, for a listing's select (false when anonymous). */
export const likedSql = (viewerId: string | null, postId: AnyColumn) =>
  viewerId
    ? sql<boolean>`exists (select 1 from ${communityPostLikes} where ${communityPostLikes.postId} = ${postId} and ${communityPostLikes.userId} = ${viewerId})`.mapWith(Boolean)
    : sql<boolean>`false`.mapWith(Boolean);

/** What a listing query selects besides the post, so a page needs no extra round trip for them. */
export interface PostExtras {
  score: number;
  likedByMe: boolean;
}

/**
 * Turns post rows into Post views with a fixed number of queries per page (authors, generations, the viewer's likes,
 * remixed originals), run side by side.
 */
export function createPostViews(deps: CommunityDeps) {
  const { db, users, generations, blocks } = deps;

  /** The current epoch's stored scores of these posts and whether the viewer likes them (one round trip). */
  async function extrasOf(ids: string[], viewerId: string | null, tx: DbOrTx): Promise<Map<string, PostExtras>> {
    const rows = await tx
      .select({ id: communityPosts.id, score: currentScoreSql(), likedByMe: likedSql(viewerId, communityPosts.id) })
      .from(communityPosts)
      .leftJoin(communityPostScores, eq(communityPostScores.postId, communityPosts.id))
      .where(inArray(communityPosts.id, ids));
    return new Map(rows.map((r) => [r.id, { score: r.score, likedByMe: r.likedByMe }]));
  }

  /**
   * `extras`: listings select score and like state with the page; single posts read them here. `hidden`: the authors the
   * viewer does not see (a listing has them already); a remix of one of their posts shows no original author, nor does
   * a remix of a post whose author's audience leaves the viewer out.
   */
  return async function toViews(
    rows: PostRow[],
    viewerId: string | null,
    options: { extras?: Map<string, PostExtras>; tx?: DbOrTx; hidden?: readonly string[] } = {},
  ): Promise<PostView[]> {
    if (rows.length === 0) return [];
    const tx = options.tx ?? db;
    const ids = rows.map((r) => r.id);
    const originalIds = [...new Set(rows.map((r) => r.remixOfPostId).filter((id): id is string => id !== null))];
    const [extras, gens, originals, authors, hidden] = await Promise.all([
      options.extras ?? extrasOf(ids, viewerId, tx),
      generations.viewsOf(rows.map((r) => r.generationId), tx),
      originalIds.length > 0
        ? tx
            .select({ id: communityPosts.id, authorId: communityPosts.authorId, visibility: communityPosts.authorVisibility })
            .from(communityPosts)
            .where(inArray(communityPosts.id, originalIds))
        : [],
      users.publicProfilesOf(rows.map((r) => r.authorId), tx),
      options.hidden ?? (viewerId && originalIds.length > 0 ? blocks.hiddenUserIds(viewerId, tx) : []),
    ]);
    const hiddenAuthors = new Set(hidden);
    const audiences = await authorsSeenBy(tx, viewerId, originals.map((o) => ({ id: o.authorId, visibility: o.visibility })));
    const shown = originals.filter((o) => !hiddenAuthors.has(o.authorId) && audiences.has(o.authorId));
    // Authors of remixed originals that are not on the page already: one more round trip, only when there are any.
    const missing = shown.map((o) => o.authorId).filter((id) => !authors.has(id));
    const people = missing.length > 0 ? new Map([...authors, ...(await users.publicProfilesOf(missing, tx))]) : authors;
    const originalAuthor = new Map(shown.map((o) => [o.id, o.authorId]));
    return rows.map((row) => {
      const gen = gens.get(row.generationId)!;
      const author = people.get(row.authorId)!;
      const remixAuthor = row.remixOfPostId ? people.get(originalAuthor.get(row.remixOfPostId) ?? '') : undefined;
      return {
        id: row.id,
        caption: row.caption,
        tags: row.tags,
        likeCount: row.likeCount,
        commentCount: row.commentCount,
        viewCount: row.viewCount,
        shareCount: row.shareCount,
        remixCount: row.remixCount,
        remixOf: row.remixOfPostId ? { id: row.remixOfPostId, author: remixAuthor ? toAuthor(remixAuthor) : null } : null,
        trendingScore: extras.get(row.id)?.score ?? 0,
        publishedAt: row.publishedAt.toISOString(),
        author: toAuthor(author),
        generation: { id: gen.id, kind: gen.kind, prompt: gen.prompt, thumbnailUrl: gen.thumbnailUrl, output: gen.output, model: gen.model },
        likedByMe: extras.get(row.id)?.likedByMe ?? false,
      };
    });
  };
}

export type PostViews = ReturnType<typeof createPostViews>;
