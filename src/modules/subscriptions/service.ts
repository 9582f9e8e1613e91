import { and, desc, eq, gt, inArray, or } from 'drizzle-orm';
import { subscriptions, type SubscriptionStatus } from '../../db/schema/subscriptions.js';
import { startOfUtcDay, startOfUtcMonth, type Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createPort, type Connectable } from '../../platform/events/hooks.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import type { UserRow } from '../auth/index.js';
import type { PlanRow, PlansService } from '../plans/service.js';
import type { WalletService } from '../wallet/service.js';
import { subscriptionResource } from './resource.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;

/** Statuses that count as active everywhere (a CANCELED subscription also keeps access until `endsAt`). */
export const ACTIVE_STATUSES: SubscriptionStatus[] = ['ACTIVE', 'TRIALING', 'GRACE'];

export interface SubscriptionsServiceDeps {
  db: Db;
  clock: Clock;
  plans: PlansService;
  wallet: WalletService;
  /** Cross-instance invalidation of the active-subscription cache (a trigger announces every subscription write). */
  events?: EventBus;
  /** Storage the owner uses, in MB (the files module measures it); 0 without it. */
  storageMbUsed?: (owner: { userId: string; workspaceId: string | null }) => Promise<number>;
}

/** The workspaces a user belongs to, oldest membership first: the workspaces module (built after this one) answers. */
export type WorkspaceIdsOf = (userId: string, tx?: DbOrTx) => Promise<string[]>;

export function createSubscriptionsService(deps: SubscriptionsServiceDeps) {
  const { db, clock, plans, wallet } = deps;
  const workspaceMemberships = createPort<WorkspaceIdsOf>('subscriptions.workspaceMemberships', "connect the workspaces service's workspaceIdsOf");
  // The gateway asks on every call; the row changes rarely, and stops counting by itself at a cancellation's end.
  const activeCache = createInvalidatingCache<SubscriptionRow | null>({
    name: 'subscriptions',
    bus: deps.events,
    now: () => clock.now().getTime(),
    load: async (userId) => (await activeRow(userId)) ?? null,
    expiresAt: (row) => (row?.status === 'CANCELED' && row.endsAt ? row.endsAt.getTime() : null),
  });

  const inEffect = (now: Date) => or(inArray(subscriptions.status, ACTIVE_STATUSES), and(eq(subscriptions.status, 'CANCELED'), gt(subscriptions.endsAt, now)));

  /** The subscription in effect on a workspace, if any. */
  async function workspaceRow(workspaceIds: string[], dbOrTx: DbOrTx = db): Promise<SubscriptionRow | undefined> {
    if (workspaceIds.length === 0) return undefined;
    const rows = await dbOrTx
      .select()
      .from(subscriptions)
      .where(and(inArray(subscriptions.workspaceId, workspaceIds), inEffect(clock.now())))
      .orderBy(desc(subscriptions.startsAt), desc(subscriptions.id));
    // the oldest membership wins when several workspaces have one
    return workspaceIds.map((id) => rows.find((row) => row.workspaceId === id)).find((row) => row !== undefined);
  }

  /**
   * What the user meters against: a workspace subscription of a workspace they belong to (the oldest membership
   * first), else their own subscription in effect.
   */
  async function activeRow(userId: string, dbOrTx: DbOrTx = db): Promise<SubscriptionRow | undefined> {
    const memberOf = workspaceMemberships.current();
    const viaWorkspace = memberOf ? await workspaceRow(await memberOf(userId, dbOrTx), dbOrTx) : undefined;
    if (viaWorkspace) return viaWorkspace;
    const [row] = await dbOrTx
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.userId, userId), inEffect(clock.now())))
      .orderBy(desc(subscriptions.startsAt), desc(subscriptions.id))
      .limit(1);
    return row;
  }

  const service = {
    /**
     * Where this module learns a user's workspaces: a member of a workspace with a subscription in effect meters against
     * that subscription and the workspace wallet. Without it everyone meters against their own.
     */
    workspaceMemberships: workspaceMemberships as Connectable<WorkspaceIdsOf>,

    /**
     * Gives a new account the `signupDefault` plan once, with its allowance as a GRANT; runs inside the sign-up
     * transaction (an `onUserCreated` hook). A second call for the same user grants nothing more.
     */
    async grantSignupPlan(tx: Tx, userId: string): Promise<SubscriptionRow | null> {
      const plan = await plans.signupDefault(tx);
      if (!plan) return null;
      const now = clock.now();
      const [created] = await tx
        .insert(subscriptions)
        .values({ userId, planId: plan.id, status: 'ACTIVE', origin: 'SIGNUP', startsAt: now, endsAt: null, autoRenew: false, createdAt: now, updatedAt: now })
        .onConflictDoNothing()
        .returning();
      if (!created) return null;
      if (plan.tokenAllowance > 0) {
        await wallet.credit(
          { userId, kind: 'GRANT', amount: plan.tokenAllowance, idempotencyKey: `signup-grant:${userId}`, note: `${plan.name} plan allowance` },
          tx,
        );
      }
      return created;
    },

    /**
     * Puts an internal account (the admin playground's identity) on an internal plan: an ACTIVE `INTERNAL` subscription
     * with no end and no allowance grant. Returns the subscription in effect when it is on that plan already.
     */
    async ensureInternal(userId: string, planId: string): Promise<SubscriptionRow> {
      const plan = await plans.getById(planId);
      if (!plan?.internal) throw new Error(`ensureInternal needs an internal plan (got ${planId})`);
      const current = await activeRow(userId);
      if (current?.planId === planId) return current;
      const now = clock.now();
      const [created] = await db
        .insert(subscriptions)
        .values({ userId, planId, status: 'ACTIVE', origin: 'INTERNAL', startsAt: now, endsAt: null, autoRenew: false, createdAt: now, updatedAt: now })
        .returning();
      service.forgetCached(userId);
      return created!;
    },

    /** The sign-up hook for the auth service. */
    onUserCreated: async (tx: Tx, user: UserRow): Promise<void> => {
      await service.grantSignupPlan(tx, user.id);
    },

    /** The caller's active subscription (ACTIVE, TRIALING or GRACE; CANCELED until its end) and its plan, or null. */
    async activeFor(userId: string): Promise<{ subscription: SubscriptionRow; plan: PlanRow } | null> {
      const row = await activeCache.get(userId);
      if (!row) return null;
      const plan = await plans.getById(row.planId);
      return plan ? { subscription: row, plan } : null;
    },

    /** Whether the caller's plan includes API access (API keys); null without an active subscription. */
    async apiAccessOf(userId: string): Promise<boolean | null> {
      const active = await service.activeFor(userId);
      return active ? (await plans.featuresOf(active.plan.id)).apiAccess : null;
    },

    /** The plan id the caller meters against, or null without an active subscription. */
    async activePlanId(userId: string): Promise<string | null> {
      return (await activeCache.get(userId))?.planId ?? null;
    },

    /** The subscription in effect on a workspace, or undefined. */
    activeForWorkspace: (workspaceId: string, tx: DbOrTx = db) => workspaceRow([workspaceId], tx),

    /** A user joined or left a workspace (in the caller's transaction): every instance reloads what they meter against. */
    membershipChanged: (userId: string, tx?: DbOrTx) => activeCache.changed(userId, tx),

    /** A change this instance just committed: the next read sees it at once (other instances hear the trigger). */
    forgetCached(userId: string): void {
      activeCache.forget(userId);
    },

    /** The Subscription resource of spec B for `/v1/users/me`, or null. */
    async activeSubscriptionView(userId: string) {
      const active = await service.activeFor(userId);
      if (!active) return null;
      const { subscription: s, plan } = active;
      const now = clock.now();
      const owner = s.workspaceId ? { workspaceId: s.workspaceId } : { userId };
      const [{ cycle, today, month }, storageMb] = await Promise.all([
        wallet.usageSince(owner, { cycle: s.startsAt, today: startOfUtcDay(now), month: startOfUtcMonth(now) }),
        deps.storageMbUsed ? deps.storageMbUsed({ userId, workspaceId: s.workspaceId }) : Promise.resolve(0),
      ]);
      return subscriptionResource(s, plan, {
        tokensUsed: cycle.tokensSpent,
        storageMbUsed: storageMb,
        // The per-bucket image and video credits were replaced by the token wallet: nothing is drawn from them.
        imageCreditsUsed: 0,
        videoCreditsUsed: 0,
        dailyRequestsUsed: today.requests,
        monthlyRequestsUsed: month.requests,
      });
    },
  };
  return service;
}

export type SubscriptionsService = ReturnType<typeof createSubscriptionsService>;
