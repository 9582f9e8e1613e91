import { and, eq, isNull } from 'drizzle-orm';
import { communityPosts, communityTrendingState, type AuthorVisibility } from '../../db/schema/community.js';
import { runBound } from '../../platform/db/bound.js';
import type { DbOrTx } from '../../platform/db/database.js';
import type { PublicUser } from '../auth/index.js';
import type { GenerationView } from '../library/service.js';
import { authorsSeenBy } from './audience.js';
import { extrasStatement, postAuthorsStatement, type OriginalAuthor, type PostExtras, type PostRow } from './post-statements.js';
import type { CommunityDeps } from './deps.js';

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

/**
 * Turns post rows into Post views with a fixed number of queries per page (authors, generations, the viewer's likes,
 * remixed originals), run side by side.
 */
export function createPostViews(deps: CommunityDeps) {
  const { db, users, generations, blocks } = deps;

  /** The current epoch's stored scores of these posts and whether the viewer likes them (one round trip). */
  async function extrasOf(ids: string[], viewerId: string | null, tx: DbOrTx): Promise<Map<string, PostExtras>> {
    const { rows } = await runBound<{ id: string; score: number; liked_by_me: boolean }>(
      tx,
      extrasStatement(viewerId !== null).bind({ ids, viewer: viewerId }),
    );
    return new Map(rows.map((r) => [r.id, { score: Number(r.score), likedByMe: r.liked_by_me }]));
  }

  async function authorsOfPosts(ids: string[], tx: DbOrTx): Promise<Array<{ id: string } & OriginalAuthor>> {
    const { rows } = await runBound<{ id: string; author_id: string; author_visibility: AuthorVisibility }>(tx, postAuthorsStatement.bind({ ids }));
    return rows.map((r) => ({ id: r.id, authorId: r.author_id, visibility: r.author_visibility }));
  }

  /**
   * `extras`: listings select score and like state with the page; single posts read them here. `originals`: the author
   * and audience of each remixed original, by id (listings select them with the page). `hidden`: the authors the viewer
   * does not see (a listing has them already); a remix of one of their posts shows no original author, nor does a remix
   * of a post whose author's audience leaves the viewer out.
   */
  return async function toViews(
    rows: PostRow[],
    viewerId: string | null,
    options: { extras?: Map<string, PostExtras>; originals?: Map<string, OriginalAuthor>; tx?: DbOrTx; hidden?: readonly string[] } = {},
  ): Promise<PostView[]> {
    if (rows.length === 0) return [];
    const tx = options.tx ?? db;
    const originalIds = [...new Set(rows.map((r) => r.remixOfPostId).filter((id): id is string => id !== null))];
    const known = options.originals;
    const [originals, hidden] = await Promise.all([
      known ? originalIds.flatMap((id) => (known.has(id) ? [{ id, ...known.get(id)! }] : [])) : originalIds.length > 0 ? authorsOfPosts(originalIds, tx) : [],
      options.hidden ?? (viewerId && originalIds.length > 0 ? blocks.hiddenUserIds(viewerId, options.tx) : []),
    ]);
    const hiddenAuthors = new Set(hidden);
    const candidates = originals.filter((o) => !hiddenAuthors.has(o.authorId));
    // The originals' authors are read with the page's (one round trip), before it is known which the viewer may see.
    const [extras, gens, people, audiences] = await Promise.all([
      options.extras ??
        extrasOf(
          rows.map((r) => r.id),
          viewerId,
          tx,
        ),
      generations.viewsOf(
        rows.map((r) => r.generationId),
        tx,
      ),
      // Outside a transaction the profiles come through the auth module's cache (`options.tx` undefined).
      users.publicProfilesOf([...rows.map((r) => r.authorId), ...candidates.map((o) => o.authorId)], options.tx),
      authorsSeenBy(
        tx,
        viewerId,
        candidates.map((o) => ({ id: o.authorId, visibility: o.visibility })),
      ),
    ]);
    const originalAuthor = new Map(candidates.filter((o) => audiences.has(o.authorId)).map((o) => [o.id, o.authorId]));
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
