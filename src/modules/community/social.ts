import { and, count, eq, isNull, or } from 'drizzle-orm';
import { communityComments, communityFollows, communityPosts, communityReports, type ReportTarget } from '../../db/schema/community.js';
import type { Tx } from '../../platform/db/database.js';
import { badRequest, forbidden, notFound } from '../../platform/http/errors.js';
import { UUID, type CommunityDeps } from './deps.js';
import type { Posts } from './posts.js';

const unknownHandle = (handle: string) => notFound(`No user has the handle @${handle}.`);

/** Profiles, follows and reports. */
export function createSocial(deps: CommunityDeps, posts: Posts) {
  const { db, clock, users, blocks, audience, notifications } = deps;

  /** Whether the account is PRIVATE to this viewer (anyone but itself): then it is unknown to them, like a wrong id. */
  const privateTo = async (userId: string, viewerId: string | null) => userId !== viewerId && (await audience.visibilityOf(userId)) === 'PRIVATE';

  /**
   * The active user with this handle as `viewerId` may know them, with their audience: a PRIVATE account is an unknown
   * handle to others.
   */
  async function userByHandle(handle: string, viewerId: string | null) {
    const user = await users.findActiveByHandle(handle);
    if (!user) throw unknownHandle(handle);
    const visibility = await audience.visibilityOf(user.id);
    if (visibility === 'PRIVATE' && user.id !== viewerId) throw unknownHandle(handle);
    return { ...user, visibility };
  }

  return {
    userByHandle,

    /** The public profile: counts of listed posts, followers and followings; `followingThem` for a signed-in viewer. */
    async profile(handle: string, viewerId: string | null) {
      const user = await userByHandle(handle, viewerId);
      const [[postCount], [followers], [following], followingThem] = await Promise.all([
        db
          .select({ n: count() })
          .from(communityPosts)
          .where(and(eq(communityPosts.authorId, user.id), isNull(communityPosts.deletedAt), isNull(communityPosts.hiddenAt))),
        db.select({ n: count() }).from(communityFollows).where(eq(communityFollows.followeeId, user.id)),
        db.select({ n: count() }).from(communityFollows).where(eq(communityFollows.followerId, user.id)),
        viewerId
          ? db
              .select({ id: communityFollows.followeeId })
              .from(communityFollows)
              .where(and(eq(communityFollows.followerId, viewerId), eq(communityFollows.followeeId, user.id)))
              .then((r) => r.length > 0)
          : false,
      ]);
      return {
        id: user.id,
        name: user.name,
        handle: user.handle,
        avatarUrl: user.avatarUrl,
        bio: user.bio,
        createdAt: user.createdAt.toISOString(),
        _count: { posts: postCount!.n, followers: followers!.n, following: following!.n },
        followingThem,
      };
    },

    /** Idempotent. A new follow notifies the followee (`NEW_FOLLOWER`). Yourself: 400; a block either way: 403. */
    async follow(userId: string, handle: string): Promise<void> {
      const target = await userByHandle(handle, userId);
      if (target.id === userId) throw badRequest('You cannot follow yourself.', { field: 'handle' });
      await db.transaction(async (tx) => {
        if (await blocks.blockedEitherWay(tx, userId, target.id)) throw forbidden(`You cannot follow @${target.handle}: one of you blocked the other.`);
        const inserted = await tx
          .insert(communityFollows)
          .values({ followerId: userId, followeeId: target.id, createdAt: clock.now() })
          .onConflictDoNothing()
          .returning({ id: communityFollows.followeeId });
        if (inserted.length === 0) return;
        const [me] = (await users.publicProfilesOf([userId], tx)).values();
        await notifications.notify(tx, {
          userId: target.id,
          type: 'NEW_FOLLOWER',
          title: `@${me!.handle} started following you`,
          payload: { userId, handle: me!.handle },
        });
      });
    },

    /**
     * Idempotent. A follower of an account that went PRIVATE may still leave it; to anyone else that account stays an
     * unknown handle (404), so unfollowing cannot tell whether it exists.
     */
    async unfollow(userId: string, handle: string): Promise<void> {
      const target = await users.findActiveByHandle(handle);
      if (!target) throw unknownHandle(handle);
      const removed = await db
        .delete(communityFollows)
        .where(and(eq(communityFollows.followerId, userId), eq(communityFollows.followeeId, target.id)))
        .returning({ id: communityFollows.followeeId });
      if (removed.length === 0 && (await privateTo(target.id, userId))) throw unknownHandle(handle);
    },

    /** The account module's block hook: a BLOCK removes the follows between the two users, both ways, in its transaction. */
    async dropFollowsBetween(tx: Tx, a: string, b: string): Promise<number> {
      const removed = await tx
        .delete(communityFollows)
        .where(
          or(
            and(eq(communityFollows.followerId, a), eq(communityFollows.followeeId, b)),
            and(eq(communityFollows.followerId, b), eq(communityFollows.followeeId, a)),
          ),
        )
        .returning({ id: communityFollows.followerId });
      return removed.length;
    },

    /** A deleted account follows nobody and has no followers. */
    async dropAllFollowsOf(tx: Tx, userId: string): Promise<void> {
      await tx.delete(communityFollows).where(or(eq(communityFollows.followerId, userId), eq(communityFollows.followeeId, userId)));
    },

    /**
     * Files a report into the moderation queue (status OPEN). The target must exist; a USER is named by id or handle.
     * Reporting the same target again while the first report is open returns that report.
     */
    async report(userId: string, input: { targetType: ReportTarget; targetId: string; reason: string; details?: string }) {
      const targetId = await resolveTarget(input.targetType, input.targetId, userId);
      const now = clock.now();
      const [created] = await db
        .insert(communityReports)
        .values({
          reporterId: userId,
          targetType: input.targetType,
          targetId,
          reason: input.reason.trim(),
          details: input.details?.trim() || null,
          createdAt: now,
        })
        .onConflictDoNothing()
        .returning();
      const row =
        created ??
        (
          await db
            .select()
            .from(communityReports)
            .where(
              and(
                eq(communityReports.reporterId, userId),
                eq(communityReports.targetType, input.targetType),
                eq(communityReports.targetId, targetId),
                eq(communityReports.status, 'OPEN'),
              ),
            )
        )[0]!;
      return {
        id: row.id,
        targetType: row.targetType,
        targetId: row.targetId,
        reason: row.reason,
        details: row.details,
        status: row.status,
        createdAt: row.createdAt.toISOString(),
      };
    },
  };

  async function resolveTarget(type: ReportTarget, id: string, userId: string): Promise<string> {
    if (type === 'POST') return (await posts.visiblePost(id, userId)).id;
    if (type === 'COMMENT') {
      const [comment] = UUID.test(id)
        ? await db
            .select({ id: communityComments.id })
            .from(communityComments)
            .where(and(eq(communityComments.id, id), isNull(communityComments.deletedAt), isNull(communityComments.hiddenAt)))
        : [];
      if (!comment) throw notFound('No such comment to report.');
      return comment.id;
    }
    const user = UUID.test(id) ? await users.findActiveById(id) : await users.findActiveByHandle(id.replace(/^@/, ''));
    if (!user || (await privateTo(user.id, userId))) throw notFound('No such user to report.');
    if (user.id === userId) throw badRequest('You cannot report yourself.', { field: 'targetId' });
    return user.id;
  }
}

export type Social = ReturnType<typeof createSocial>;
