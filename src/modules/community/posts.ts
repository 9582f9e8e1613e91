import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import {
  communityLikeNotices,
  communityPostDaily,
  communityPostLikes,
  communityPostScores,
  communityPosts,
  type AuthorVisibility,
} from '../../db/schema/community.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { badRequest, forbidden, notFound } from '../../platform/http/errors.js';
import type { CommunityDeps } from './deps.js';
import { createVisiblePost } from './visible-post.js';
import { LISTED, type PostViews, type PostView } from './views.js';
import type { Works } from './works.js';

export interface PublishInput {
  generationId: string;
  caption?: string;
  tags?: string[];
  remixOfPostId?: string;
}

/** `#Sunset ` and `sunset` are the same tag: trimmed, without a leading `#`, lower-cased, each once. */
export const normaliseTags = (tags: string[]) => [...new Set(tags.map((t) => t.trim().replace(/^#+/, '').toLowerCase()).filter((t) => t.length > 0))];

/** The UTC day of an instant, as the daily tables key it. */
export const utcDay = (at: Date) => at.toISOString().slice(0, 10);

export function createPosts(deps: CommunityDeps, views: PostViews, works: Works) {
  const { db, clock, users, generations, audience, notifications } = deps;

  const visiblePost = createVisiblePost(deps);

  async function bumpDaily(tx: DbOrTx, postId: string, column: 'views' | 'shares') {
    const day = utcDay(clock.now());
    const target = communityPostDaily[column];
    await tx
      .insert(communityPostDaily)
      .values({ postId, day, [column]: 1 })
      .onConflictDoUpdate({ target: [communityPostDaily.postId, communityPostDaily.day], set: { [column]: sql`${target} + 1` } });
  }

  return {
    visiblePost,

    /** A deleted account's posts leave every feed and list (hidden, kept for moderation and the author's export). */
    async hideAllOf(tx: Tx, authorId: string, at: Date): Promise<void> {
      await tx
        .update(communityPosts)
        .set({ hiddenAt: at, updatedAt: at })
        .where(and(eq(communityPosts.authorId, authorId), isNull(communityPosts.hiddenAt)));
    },

    /**
     * The account module's hook, in the transaction that changes the author's `profileVisibility`: their listed posts
     * and works take the new audience (through the author index). A post leaves the lists when deleted or hidden and
     * comes back only by publishing again, which sets the audience then.
     */
    async setAuthorVisibility(tx: Tx, authorId: string, visibility: AuthorVisibility): Promise<void> {
      await tx
        .update(communityPosts)
        .set({ authorVisibility: visibility })
        .where(and(eq(communityPosts.authorId, authorId), LISTED, ne(communityPosts.authorVisibility, visibility)));
      await works.setAuthorVisibility(tx, authorId, visibility);
    },

    /**
     * Publishes a generation of the caller's library, or republishes it (same post, same mirrored work; a deleted
     * post comes back). The generation becomes PUBLIC. `remixOfPostId` credits the original once, on the first
     * publication that names one; later republications keep that credit and never count it again. The post takes
     * its author's audience, read under a share lock of the preference held to the commit: a concurrent change of the
     * preference waits for this post, and its hook then updates it too, so no post keeps an audience the author left.
     */
    async publish(userId: string, input: PublishInput): Promise<PostView> {
      const user = await users.findActiveById(userId);
      if (!user?.handle) throw badRequest('Choose a handle before publishing: PATCH /v1/account/profile with { handle }.', { field: 'handle' });
      const generation = await generations.ownRow(userId, input.generationId);
      if (input.remixOfPostId) {
        const original = await visiblePost(input.remixOfPostId, userId).catch(() => {
          throw notFound('The post named by remixOfPostId does not exist or was deleted.');
        });
        if (original.generationId === generation.id) throw badRequest('A post cannot be a remix of itself.', { field: 'remixOfPostId' });
      }
      const tags = input.tags === undefined ? undefined : normaliseTags(input.tags);
      const now = clock.now();
      const post = await db.transaction(async (tx) => {
        const authorVisibility = await audience.holdVisibility(tx, userId);
        await tx
          .insert(communityPosts)
          .values({
            authorId: userId,
            generationId: generation.id,
            caption: input.caption ?? '',
            tags: tags ?? [],
            publishedAt: now,
            updatedAt: now,
            authorVisibility,
          })
          .onConflictDoNothing({ target: communityPosts.generationId });
        const [current] = await tx.select().from(communityPosts).where(eq(communityPosts.generationId, generation.id)).for('update');
        const credit = current!.remixOfPostId === null && input.remixOfPostId !== undefined;
        const [updated] = await tx
          .update(communityPosts)
          .set({
            ...(input.caption !== undefined ? { caption: input.caption } : {}),
            ...(tags !== undefined ? { tags } : {}),
            ...(credit ? { remixOfPostId: input.remixOfPostId } : {}),
            authorVisibility,
            deletedAt: null,
            updatedAt: now,
          })
          .where(eq(communityPosts.id, current!.id))
          .returning();
        if (credit) {
          await tx
            .update(communityPosts)
            .set({ remixCount: sql`${communityPosts.remixCount} + 1` })
            .where(eq(communityPosts.id, input.remixOfPostId!));
        }
        await tx.insert(communityPostScores).values({ postId: updated!.id, authorId: userId }).onConflictDoNothing();
        await generations.setVisibility(userId, generation.id, 'PUBLIC', tx);
        await works.mirrorPost(tx, updated!, generation);
        return updated!;
      });
      const [view] = await views([post], userId);
      return view!;
    },

    /** One post; counts a view (every call, like the gallery's view counter). */
    async get(postId: string, viewerId: string | null): Promise<PostView> {
      const row = await db.transaction(async (tx) => {
        const post = await visiblePost(postId, viewerId, tx);
        const [counted] = await tx
          .update(communityPosts)
          .set({ viewCount: sql`${communityPosts.viewCount} + 1` })
          .where(eq(communityPosts.id, post.id))
          .returning();
        await bumpDaily(tx, post.id, 'views');
        return counted!;
      });
      const [view] = await views([row], viewerId);
      return view!;
    },

    /** The author soft-deletes a post; its mirrored work is hidden with it. Another user's post: 403. */
    async remove(userId: string, postId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const post = await visiblePost(postId, userId, tx);
        if (post.authorId !== userId) throw forbidden('Only the author can delete this post.');
        await tx.update(communityPosts).set({ deletedAt: clock.now(), updatedAt: clock.now() }).where(eq(communityPosts.id, post.id));
        await works.hideForPost(tx, post.id);
      });
    },

    /** Idempotent. The first like a user ever gives a post notifies its author (`POST_LIKED`). */
    async like(userId: string, postId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const post = await visiblePost(postId, userId, tx);
        const inserted = await tx
          .insert(communityPostLikes)
          .values({ postId: post.id, userId, createdAt: clock.now() })
          .onConflictDoNothing()
          .returning({ postId: communityPostLikes.postId });
        if (inserted.length === 0) return;
        await tx
          .update(communityPosts)
          .set({ likeCount: sql`${communityPosts.likeCount} + 1` })
          .where(eq(communityPosts.id, post.id));
        const first = await tx
          .insert(communityLikeNotices)
          .values({ postId: post.id, userId })
          .onConflictDoNothing()
          .returning({ postId: communityLikeNotices.postId });
        if (first.length === 0 || post.authorId === userId) return;
        const [liker] = (await users.publicProfilesOf([userId], tx)).values();
        await notifications.notify(tx, {
          userId: post.authorId,
          type: 'POST_LIKED',
          title: `@${liker!.handle} liked your post`,
          payload: { postId: post.id, userId, handle: liker!.handle },
        });
      });
    },

    /** Idempotent. */
    async unlike(userId: string, postId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const post = await visiblePost(postId, userId, tx);
        const removed = await tx
          .delete(communityPostLikes)
          .where(and(eq(communityPostLikes.postId, post.id), eq(communityPostLikes.userId, userId)))
          .returning({ postId: communityPostLikes.postId });
        if (removed.length === 0) return;
        await tx
          .update(communityPosts)
          .set({ likeCount: sql`${communityPosts.likeCount} - 1` })
          .where(eq(communityPosts.id, post.id));
      });
    },

    /** Counts a share and answers ready-made links for each network. */
    async share(postId: string, viewerId: string | null) {
      const shareCount = await db.transaction(async (tx) => {
        const post = await visiblePost(postId, viewerId, tx);
        const [row] = await tx
          .update(communityPosts)
          .set({ shareCount: sql`${communityPosts.shareCount} + 1` })
          .where(eq(communityPosts.id, post.id))
          .returning({ shareCount: communityPosts.shareCount });
        await bumpDaily(tx, post.id, 'shares');
        return row!.shareCount;
      });
      const url = `${deps.frontendUrl.replace(/\/$/, '')}/community/posts/${postId}`;
      const u = encodeURIComponent(url);
      return {
        ok: true as const,
        shareCount,
        url,
        links: {
          x: `https://twitter.com/intent/tweet?url=${u}`,
          facebook: `https://www.facebook.com/sharer/sharer.php?u=${u}`,
          linkedin: `https://www.linkedin.com/sharing/share-offsite/?url=${u}`,
          reddit: `https://www.reddit.com/submit?url=${u}`,
          whatsapp: `https://wa.me/?text=${u}`,
          telegram: `https://t.me/share/url?url=${u}`,
          email: `mailto:?body=${u}`,
        },
      };
    },

    /** What the post was made with, to prefill the studio; what is unknown is omitted. */
    async recipe(postId: string, viewerId: string | null) {
      const post = await visiblePost(postId, viewerId);
      const gen = (await generations.viewsOf([post.generationId])).get(post.generationId)!;
      const parameters: Record<string, unknown> = {};
      const output = gen.output as { images?: unknown[]; videos?: Array<{ durationSeconds?: number }> };
      if (gen.kind === 'IMAGE' && Array.isArray(output.images) && output.images.length > 0) parameters.count = output.images.length;
      if (gen.kind === 'VIDEO' && typeof output.videos?.[0]?.durationSeconds === 'number') parameters.durationSeconds = output.videos[0].durationSeconds;
      return {
        postId: post.id,
        generationId: gen.id,
        kind: gen.kind,
        prompt: gen.prompt,
        ...(gen.model ? { model: gen.model } : {}),
        parameters,
      };
    },
  };
}

export type Posts = ReturnType<typeof createPosts>;
