import { and, asc, eq, inArray, isNull, notInArray, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { communityComments, communityPosts } from '../../db/schema/community.js';
import { forbidden, notFound } from '../../platform/http/errors.js';
import { UUID, type CommunityDeps } from './deps.js';
import type { Posts } from './posts.js';

export const COMMENTS_MAX = 100;

type CommentRow = typeof communityComments.$inferSelect;
type ReplyRow = Pick<CommentRow, 'id' | 'parentId' | 'authorId' | 'body' | 'createdAt'>;

export interface CommentView {
  id: string;
  body: string;
  author: { name: string | null; handle: string; avatarUrl: string | null };
  replies: CommentView[];
  createdAt: string;
}

const noSuchComment = () => notFound('No such comment. It may have been deleted.');

/**
 * Comments with one level of replies. A reply to a reply is attached to the top-level comment it answers. Deleting a
 * top-level comment deletes its replies too, so `commentCount` always equals the comments a listing shows.
 */
export function createComments(deps: CommunityDeps, posts: Posts) {
  const { db, clock, users, blocks, notifications } = deps;

  return {
    /** Up to 100 top-level comments, oldest first, each with up to 100 replies (oldest first); blocked and muted authors left out. */
    async list(postId: string, viewerId: string | null): Promise<{ items: CommentView[] }> {
      const post = await posts.visiblePost(postId, viewerId);
      const hidden = viewerId ? await blocks.hiddenUserIds(viewerId) : [];
      const shown = and(
        isNull(communityComments.deletedAt),
        isNull(communityComments.hiddenAt),
        hidden.length > 0 ? notInArray(communityComments.authorId, hidden) : undefined,
      );
      const top = await db
        .select()
        .from(communityComments)
        .where(and(eq(communityComments.postId, post.id), isNull(communityComments.parentId), shown))
        .orderBy(asc(communityComments.createdAt), asc(communityComments.id))
        .limit(COMMENTS_MAX);
      // Each comment's first replies, read per comment from the (parent, created_at, id) index: never more than 100 each.
      const parent = alias(communityComments, 'parent');
      const firstReplies = db
        .select()
        .from(communityComments)
        .where(and(eq(communityComments.parentId, parent.id), shown))
        .orderBy(asc(communityComments.createdAt), asc(communityComments.id))
        .limit(COMMENTS_MAX)
        .as('reply');
      const replies: ReplyRow[] =
        top.length > 0
          ? await db
              .select({
                id: firstReplies.id,
                parentId: firstReplies.parentId,
                authorId: firstReplies.authorId,
                body: firstReplies.body,
                createdAt: firstReplies.createdAt,
              })
              .from(parent)
              .innerJoinLateral(firstReplies, sql`true`)
              .where(
                inArray(
                  parent.id,
                  top.map((c) => c.id),
                ),
              )
              .orderBy(asc(firstReplies.createdAt), asc(firstReplies.id))
          : [];
      const people = await users.publicProfilesOf([...top, ...replies].map((c) => c.authorId));
      const view = (c: ReplyRow, children: CommentView[]): CommentView => {
        const p = people.get(c.authorId)!;
        return {
          id: c.id,
          body: c.body,
          author: { name: p.name, handle: p.handle, avatarUrl: p.avatarUrl },
          replies: children,
          createdAt: c.createdAt.toISOString(),
        };
      };
      return {
        items: top.map((c) =>
          view(
            c,
            replies.filter((r) => r.parentId === c.id).map((r) => view(r, [])),
          ),
        ),
      };
    },

    /** Adds a comment (or a reply, with `parentId`) and notifies the post's author (`POST_COMMENTED`). */
    async create(userId: string, postId: string, input: { body: string; parentId?: string }): Promise<CommentView> {
      const row = await db.transaction(async (tx) => {
        const post = await posts.visiblePost(postId, userId, tx);
        let parentId: string | null = null;
        if (input.parentId) {
          if (!UUID.test(input.parentId)) throw notFound('The comment you reply to does not exist on this post.');
          const [parent] = await tx
            .select()
            .from(communityComments)
            .where(
              and(
                eq(communityComments.id, input.parentId),
                eq(communityComments.postId, post.id),
                isNull(communityComments.deletedAt),
                isNull(communityComments.hiddenAt),
              ),
            )
            .for('share');
          if (!parent) throw notFound('The comment you reply to does not exist on this post.');
          parentId = parent.parentId ?? parent.id;
        }
        const [comment] = await tx
          .insert(communityComments)
          .values({ postId: post.id, authorId: userId, parentId, body: input.body, createdAt: clock.now() })
          .returning();
        await tx
          .update(communityPosts)
          .set({ commentCount: sql`${communityPosts.commentCount} + 1` })
          .where(eq(communityPosts.id, post.id));
        if (post.authorId !== userId) {
          const [me] = (await users.publicProfilesOf([userId], tx)).values();
          await notifications.notify(tx, {
            userId: post.authorId,
            type: 'POST_COMMENTED',
            title: `@${me!.handle} commented on your post`,
            body: input.body.slice(0, 200),
            payload: { postId: post.id, commentId: comment!.id, userId, handle: me!.handle },
          });
        }
        return comment!;
      });
      const me = (await users.publicProfilesOf([userId])).get(userId)!;
      return {
        id: row.id,
        body: row.body,
        author: { name: me.name, handle: me.handle, avatarUrl: me.avatarUrl },
        replies: [],
        createdAt: row.createdAt.toISOString(),
      };
    },

    /** Soft-deletes one's own comment (and the replies under it); someone else's: 403. */
    async remove(userId: string, commentId: string): Promise<void> {
      if (!UUID.test(commentId)) throw noSuchComment();
      await db.transaction(async (tx) => {
        const [comment] = await tx
          .select()
          .from(communityComments)
          .where(and(eq(communityComments.id, commentId), isNull(communityComments.deletedAt)))
          .for('update');
        if (!comment) throw noSuchComment();
        if (comment.authorId !== userId) throw forbidden('You can delete only your own comments.');
        const now = clock.now();
        const gone = await tx
          .update(communityComments)
          .set({ deletedAt: now })
          .where(and(isNull(communityComments.deletedAt), sql`(${communityComments.id} = ${comment.id} or ${communityComments.parentId} = ${comment.id})`))
          .returning({ id: communityComments.id, hiddenAt: communityComments.hiddenAt });
        // Comments hidden by moderation already left the count.
        const listed = gone.filter((c) => c.hiddenAt === null).length;
        await tx
          .update(communityPosts)
          .set({ commentCount: sql`${communityPosts.commentCount} - ${listed}` })
          .where(eq(communityPosts.id, comment.postId));
      });
    },
  };
}

export type Comments = ReturnType<typeof createComments>;
