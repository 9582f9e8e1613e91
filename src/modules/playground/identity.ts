import type { Principal } from '../../platform/auth/plugin.js';
import { AppError } from '../../platform/http/errors.js';
import { PLAYGROUND_IDENTITY_EMAIL, type AuthService } from '../auth/index.js';
import type { CatalogService } from '../catalog/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { WalletService } from '../wallet/service.js';

/**
 * The balance the playground identity's wallet is topped up to before a run (20,000 credits at the default 10,000
 * tokens per credit): enough for any single generation the catalog prices today, so a run is never refused for tokens.
 */
export const PLAYGROUND_FLOAT_TOKENS = 200_000_000;

/** Where the start's warning goes (the service's logger). */
export interface WarningLog {
  warn(fields: object, message: string): void;
}

export interface PlaygroundIdentityDeps {
  auth: Pick<AuthService, 'ensureInternalAccount'>;
  plans: Pick<PlansService, 'playgroundPlan' | 'allowModel' | 'isModelAllowed'>;
  subscriptions: Pick<SubscriptionsService, 'activeFor' | 'ensureInternal'>;
  wallet: Pick<WalletService, 'ensure' | 'credit'>;
  catalog: Pick<CatalogService, 'getBySlug'>;
  newId: () => string;
}

/** The playground's account: found by its kind, never by its address (which an older account may hold instead). */
export const PLAYGROUND_ACCOUNT = { kind: 'PLAYGROUND', email: PLAYGROUND_IDENTITY_EMAIL, name: 'Admin playground' } as const;

/**
 * The dedicated internal identity every playground run is metered under (spec B "Playground behaviour"): the service's
 * own PLAYGROUND account (created at start, no password, cannot sign in), subscribed to the internal unlimited plan, the
 * target model added to that plan's allow-list on first use, and its wallet kept funded with GRANTs so the real
 * reservation and settlement run (and the ledger stays the truth) without ever refusing a run.
 */
export function createPlaygroundIdentity(deps: PlaygroundIdentityDeps) {
  const { auth, plans, subscriptions, wallet, catalog } = deps;
  let userId: Promise<string> | null = null;

  async function playgroundPlanId(): Promise<string> {
    const plan = await plans.playgroundPlan();
    if (!plan) throw new AppError(503, 'SERVICE_UNAVAILABLE', 'The internal playground plan is missing; restart the service so the plans are seeded again.');
    return plan.id;
  }

  /** The identity's user id (looked up once per process; concurrent first uses agree on one account). */
  function identityId(): Promise<string> {
    userId ??= auth.ensureInternalAccount(PLAYGROUND_ACCOUNT).then(
      ({ user }) => user.id,
      (err: unknown) => {
        userId = null;
        throw err;
      },
    );
    return userId;
  }

  /** A GRANT restoring the float when the balance (less any unpaid overrun, which a credit collects first) is below it. */
  async function fund(id: string): Promise<void> {
    const row = await wallet.ensure({ userId: id });
    const available = row.balance - row.debt;
    if (available >= PLAYGROUND_FLOAT_TOKENS / 2) return;
    await grant(id, PLAYGROUND_FLOAT_TOKENS - available);
  }

  const grant = (id: string, tokens: number) =>
    wallet.credit({
      userId: id,
      kind: 'GRANT',
      amount: tokens,
      idempotencyKey: `playground-float:${deps.newId()}`,
      note: 'Admin playground float (internal unlimited plan)',
    });

  return {
    identityId,

    /**
     * Makes sure the identity exists (at start) and warns when an ordinary account holds the playground's address: one
     * signed up before the domain was reserved. That account is left as it is and never gets the playground's plan,
     * grants or generations; anything it got before this fix is for an operator to review.
     */
    async ensure(log: WarningLog): Promise<void> {
      const { user, squatter } = await auth.ensureInternalAccount(PLAYGROUND_ACCOUNT);
      userId = Promise.resolve(user.id);
      if (!squatter) return;
      log.warn(
        { squattedAddress: squatter.email, squatterId: squatter.id, playgroundAccountId: user.id, playgroundAddress: user.email },
        `The admin playground's address ${squatter.email} is held by an ordinary account (${squatter.id}) made before addresses at that domain were reserved; the playground runs as ${user.email} instead. Review that account: if it received the internal playground plan, its token grants or playground generations before this release, cancel the plan or suspend it.`,
      );
    },

    /** The principal a run goes through the gateway as, ready for `modelSlug`: subscribed, allow-listed and funded. */
    async prepare(modelSlug: string | null): Promise<Principal> {
      const id = await identityId();
      const planId = await playgroundPlanId();
      if ((await subscriptions.activeFor(id))?.plan.id !== planId) await subscriptions.ensureInternal(id, planId);
      // An unknown slug is left to the gateway, which answers it with its own 404.
      const model = modelSlug ? await catalog.getBySlug(modelSlug) : undefined;
      if (model && !(await plans.isModelAllowed(planId, model.row.id))) await plans.allowModel(planId, model.row.id);
      await fund(id);
      return { userId: id, role: 'USER', sessionId: null, via: 'access_token', scopes: null, apiKeyId: null };
    },

    /**
     * Runs `call`; a wallet refusal (a generation priced above the float) is met with a GRANT of its shortfall and one
     * retry. The refusal happens before anything is reserved or sent upstream, so the retry cannot run a call twice.
     */
    async unblocked<T>(principal: Principal, call: () => Promise<T>): Promise<T> {
      try {
        return await call();
      } catch (err) {
        const shortfall =
          err instanceof AppError && err.code === 'QUOTA_EXCEEDED' ? (err.details as { shortfallTokens?: unknown } | null)?.shortfallTokens : undefined;
        if (typeof shortfall !== 'number' || shortfall <= 0) throw err;
        await grant(principal.userId, shortfall);
        return call();
      }
    },
  };
}

export type PlaygroundIdentity = ReturnType<typeof createPlaygroundIdentity>;
