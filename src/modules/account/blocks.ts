import { and, eq, or } from 'drizzle-orm';
import { userBlocks } from '../../db/schema/account.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import type { AccountDeps } from './deps.js';

export type BlockKind = (typeof userBlocks.$inferSelect)['kind'];

/**
 * Work of other modules when a user BLOCKs another, run inside the transaction that creates the block (e.g. the
 * community's social graph removes the follows between the two, in both directions). A hook rather than an outbox
 * event: the rule must hold the moment the block answers, and the hook's writes commit or fail with it.
 */
export type UserBlockedHook = (tx: Tx, blockerId: string, blockedId: string) => Promise<void>;

const unknownHandle = (handle: string) => notFound(`No user has the handle @${handle}.`);

/** `userBlocked`: raises the event to the other modules' handlers (`account.userBlocked`). */
export function createBlocks(deps: AccountDeps, userBlocked: UserBlockedHook) {
  const { db, clock, auth } = deps;

  const hiddenFrom = async (viewerId: string, tx: DbOrTx): Promise<string[]> => {
    const rows = await tx
      .select({ userId: userBlocks.userId, blockedUserId: userBlocks.blockedUserId })
      .from(userBlocks)
      .where(or(eq(userBlocks.userId, viewerId), and(eq(userBlocks.blockedUserId, viewerId), eq(userBlocks.kind, 'BLOCK'))));
    return [...new Set(rows.map((r) => (r.userId === viewerId ? r.blockedUserId : r.userId)))];
  };
  /**
   * Every listing a signed-in viewer reads asks for their hidden authors first; they change only when the viewer or
   * someone blocking them changes a block, so each instance keeps them, and a change drops both users' entries on every
   * instance when its transaction commits.
   */
  const hiddenCache = createInvalidatingCache<readonly string[]>({ name: 'hidden_authors', bus: deps.events, load: (viewerId) => hiddenFrom(viewerId, db) });
  const blocksChanged = async (tx: Tx, a: string, b: string) => {
    await hiddenCache.changed(a, tx);
    await hiddenCache.changed(b, tx);
  };

  const userByHandle = (handle: string) => auth.users.findActiveByHandle(handle);

  const toBlock = (row: { handle: string; kind: BlockKind; reason: string | null; createdAt: Date }) => ({
    handle: row.handle,
    kind: row.kind,
    reason: row.reason,
    createdAt: row.createdAt.toISOString(),
  });

  return {
    async list(userId: string, query: { limit: number; cursor?: string }) {
      const page = await newestFirstPage(db, userBlocks, 'createdAt', eq(userBlocks.userId, userId), query);
      const handles = await auth.users.handlesOf(page.items.map((b) => b.blockedUserId));
      // A user row is never removed (deletion is soft), so every blocked user has a handle.
      return { items: page.items.map((b) => toBlock({ ...b, handle: handles.get(b.blockedUserId)! })), nextCursor: page.nextCursor };
    },

    /** Blocks or mutes a user; doing it again updates the kind and reason. A BLOCK drops the follows both ways. */
    async create(userId: string, input: { handle: string; kind?: BlockKind; reason?: string | null }) {
      const target = await userByHandle(input.handle);
      if (!target) throw unknownHandle(input.handle);
      if (target.id === userId) throw badRequest('You cannot block or mute yourself.', { field: 'handle' });
      const kind = input.kind ?? 'BLOCK';
      const reason = input.reason?.trim() ? input.reason.trim() : null;
      const now = clock.now();
      return db.transaction(async (tx) => {
        const [existing] = await tx
          .select({ id: userBlocks.id })
          .from(userBlocks)
          .where(and(eq(userBlocks.userId, userId), eq(userBlocks.blockedUserId, target.id)));
        const [row] = await tx
          .insert(userBlocks)
          .values({ userId, blockedUserId: target.id, kind, reason, createdAt: now })
          .onConflictDoUpdate({ target: [userBlocks.userId, userBlocks.blockedUserId], set: { kind, reason } })
          .returning();
        if (kind === 'BLOCK') await userBlocked(tx, userId, target.id);
        await blocksChanged(tx, userId, target.id);
        return { created: !existing, block: toBlock({ handle: target.handle, kind: row!.kind, reason: row!.reason, createdAt: row!.createdAt }) };
      });
    },

    async remove(userId: string, handle: string): Promise<void> {
      const target = await userByHandle(handle);
      if (!target) throw unknownHandle(handle);
      const removed = await db
        .delete(userBlocks)
        .where(and(eq(userBlocks.userId, userId), eq(userBlocks.blockedUserId, target.id)))
        .returning({ id: userBlocks.id });
      if (removed.length === 0) throw notFound(`You have not blocked or muted @${target.handle}.`);
      await hiddenCache.changed(userId);
      await hiddenCache.changed(target.id);
    },

    /**
     * For other modules' listings: the users whose content `viewerId` must not see: those the viewer blocked or
     * muted, and those who blocked the viewer. Inside a transaction (`tx`) read from it; otherwise from the cache.
     */
    async hiddenUserIds(viewerId: string, tx?: DbOrTx): Promise<string[]> {
      return tx ? hiddenFrom(viewerId, tx) : [...(await hiddenCache.get(viewerId))];
    },

    /** For other modules (feeds, comments, follows): true when either user BLOCKed the other. */
    async blockedEitherWay(tx: DbOrTx, a: string, b: string): Promise<boolean> {
      const [row] = await tx
        .select({ id: userBlocks.id })
        .from(userBlocks)
        .where(
          and(
            eq(userBlocks.kind, 'BLOCK'),
            or(and(eq(userBlocks.userId, a), eq(userBlocks.blockedUserId, b)), and(eq(userBlocks.userId, b), eq(userBlocks.blockedUserId, a))),
          ),
        )
        .limit(1);
      return row !== undefined;
    },
  };
}
