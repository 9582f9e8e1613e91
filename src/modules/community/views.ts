import { and, eq, inArray } from 'drizzle-orm';
import { communityPostLikes, communityPostScores, communityPosts, communityTrendingState } from '../../db/schema/community.js';
import type { DbOrTx } from '../../platform/db/database.js';
import type { PublicUser } from '../auth/index.js';
import type { GenerationView } from '../library/service.js';
import type { CommunityDeps } from './deps.js';

export type PostRow = typeof communityPosts.$inferSelect;

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

/**
 * Turns post rows into Post views with a fixed number of queries per page (authors, generations, the viewer's likes,
 * remixed originals), run side by side.
 */
export function createPostViews(deps: CommunityDeps) {
  const { db, users, generations } = deps;

  /** The current epoch's stored scores of these posts. */
  async function scoresOf(ids: string[], tx: DbOrTx): Promise<Map<string, number>> {
    const epoch = await currentEpoch(tx);
    const rows = await tx.select({ id: communityPostScores.postId, score: scoreColumn(epoch) }).from(communityPostScores).where(inArray(communityPostScores.postId, ids));
    return new Map(rows.map((r) => [r.id, r.score]));
  }

  /** `scores`: the trending feed passes the scores it ordered by; other callers read the current epoch's. */
  return async function toViews(rows: PostRow[], viewerId: string | null, options: { scores?: Map<string, number>; tx?: DbOrTx } = {}): Promise<PostView[]> {
    if (rows.length === 0) return [];
    const tx = options.tx ?? db;
    const ids = rows.map((r) => r.id);
    const originalIds = [...new Set(rows.map((r) => r.remixOfPostId).filter((id): id is string => id !== null))];
    const [scores, liked, gens, originals, authors] = await Promise.all([
      options.scores ?? scoresOf(ids, tx),
      viewerId
        ? tx
            .select({ postId: communityPostLikes.postId })
            .from(communityPostLikes)
            .where(and(eq(communityPostLikes.userId, viewerId), inArray(communityPostLikes.postId, ids)))
            .then((r) => new Set(r.map((x) => x.postId)))
        : new Set<string>(),
      generations.viewsOf(rows.map((r) => r.generationId), tx),
      originalIds.length > 0
        ? tx.select({ id: communityPosts.id, authorId: communityPosts.authorId }).from(communityPosts).where(inArray(communityPosts.id, originalIds))
        : [],
      users.publicProfilesOf(rows.map((r) => r.authorId), tx),
    ]);
    // Authors of remixed originals that are not on the page already: one more round trip, only when there are any.
    const missing = originals.map((o) => o.authorId).filter((id) => !authors.has(id));
    const people = missing.length > 0 ? new Map([...authors, ...(await users.publicProfilesOf(missing, tx))]) : authors;
    const originalAuthor = new Map(originals.map((o) => [o.id, o.authorId]));
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
        trendingScore: scores.get(row.id) ?? 0,
        publishedAt: row.publishedAt.toISOString(),
        author: toAuthor(author),
        generation: { id: gen.id, kind: gen.kind, prompt: gen.prompt, thumbnailUrl: gen.thumbnailUrl, output: gen.output, model: gen.model },
        likedByMe: liked.has(row.id),
      };
    });
  };
}

export type PostViews = ReturnType<typeof createPostViews>;
