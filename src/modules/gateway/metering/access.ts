import type { Principal } from '../../../platform/auth/plugin.js';
import { startOfUtcDay, type Clock } from '../../../platform/clock/clock.js';
import type { Tx } from '../../../platform/db/database.js';
import { AppError, forbidden } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import type { JobOwner, JobsService } from '../../jobs/service.js';
import type { PlansService } from '../../plans/service.js';
import type { SubscriptionsService } from '../../subscriptions/service.js';
import type { WalletOwner, WalletService } from '../../wallet/service.js';

// What the caller's plan allows: the checks of every gateway call, then its limits (daily requests, concurrent jobs).

export interface AccessDeps {
  subscriptions: Pick<SubscriptionsService, 'activeFor'>;
  plans: Pick<PlansService, 'isModelAllowed' | 'featuresOf'>;
  /** The plan's `dailyRequests`; without it requests are not counted. */
  dailyRequests?: Pick<DailyRequestLimit, 'admit'>;
}

export interface Access {
  subscriptionId: string;
  /** The wallet the call is metered against (the workspace's for workspace subscriptions). */
  owner: WalletOwner;
  /** The limits of the plan in effect (`concurrentJobs` is checked where a job is created). */
  limits: PlanLimits;
}

/**
 * The plan checks of every gateway call, in the spec's order: an active plan, API access for keys, the model in the
 * plan; then the request is counted against the plan's daily limit (429 QUOTA_EXCEEDED), before anything is reserved.
 */
export async function checkAccess(deps: AccessDeps, principal: Principal, model: GatewayModel): Promise<Access> {
  const active = await deps.subscriptions.activeFor(principal.userId);
  if (!active) {
    throw new AppError(403, 'NO_ACTIVE_SUBSCRIPTION', 'You need an active plan to use the AI gateway. Choose a plan under /v1/plans.');
  }
  if (principal.via === 'api_key' && !(await deps.plans.featuresOf(active.plan.id)).apiAccess) {
    throw forbidden(`Your plan "${active.plan.name}" does not include API access, so API keys cannot call the gateway. Upgrade your plan.`, {
      feature: 'apiAccess',
    });
  }
  const keyAllows = principal.keyControls?.allowedModels;
  if (keyAllows && !keyAllows.includes(model.slug)) {
    throw new AppError(
      403,
      'MODEL_NOT_ALLOWED_FOR_KEY',
      `This API key may call only ${keyAllows.map((slug) => `"${slug}"`).join(', ')}, not "${model.slug}". The key owner can change that with PATCH /v1/account/api-keys/{id}.`,
      {
        model: model.slug,
        allowedModels: keyAllows,
      },
    );
  }
  if (!(await deps.plans.isModelAllowed(active.plan.id, model.id))) {
    throw new AppError(
      403,
      'MODEL_NOT_IN_PLAN',
      `Your plan "${active.plan.name}" does not include the model "${model.slug}". Upgrade to a plan that includes it (see availableOn in GET /v1/models).`,
      {
        model: model.slug,
        plan: active.plan.slug,
      },
    );
  }
  const subscription = active.subscription;
  const owner: WalletOwner = subscription.workspaceId ? { workspaceId: subscription.workspaceId } : { userId: principal.userId };
  const limits = planLimitsOf(active.plan);
  await deps.dailyRequests?.admit(owner, limits);
  return { subscriptionId: subscription.id, owner, limits };
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The limits of a plan the gateway enforces; null: the plan sets none (a missing or non-numeric key). */
export interface PlanLimits {
  planName: string;
  dailyRequests: number | null;
  concurrentJobs: number | null;
}

const limitOf = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : null);

export const planLimitsOf = (plan: { name: string; limits: Record<string, unknown> }): PlanLimits => ({
  planName: plan.name,
  dailyRequests: limitOf(plan.limits.dailyRequests),
  concurrentJobs: limitOf(plan.limits.concurrentJobs),
});

const ownerKeyOf = (owner: WalletOwner): string => (owner.workspaceId ? `workspace:${owner.workspaceId}` : `user:${owner.userId}`);

export interface DailyRequestsOptions {
  clock: Clock;
  wallet: Pick<WalletService, 'usageSince'>;
  /** How long this instance counts on its own before it reads the wallet's figure again (default 5 s). */
  refreshMs?: number;
  /** Owners counted at most; the least recently seen is dropped first (default 50,000). */
  maxOwners?: number;
}

interface DayCount {
  day: number;
  used: number;
  readAt: number;
}

/**
 * The plan's `dailyRequests`: metered AI requests per UTC day on the owner's wallet, counted as `dailyRequestsUsed` of
 * `/v1/users/me` counts them (generations started today whose tokens were not all refunded). Each instance reads that
 * figure at most every `refreshMs` per owner and counts the requests it admits meanwhile, so a busy owner costs no
 * read per request; instances admitting the same owner at once can overshoot by what the others admitted since their
 * last read.
 */
export function createDailyRequestLimit(options: DailyRequestsOptions) {
  const { clock, wallet } = options;
  const refreshMs = options.refreshMs ?? 5_000;
  const maxOwners = options.maxOwners ?? 50_000;
  const counts = new Map<string, DayCount>();
  const reading = new Map<string, Promise<DayCount>>();

  async function countOf(owner: WalletOwner, key: string, day: Date, now: number): Promise<DayCount> {
    const known = counts.get(key);
    if (known && known.day === day.getTime() && now - known.readAt < refreshMs) return known;
    let pending = reading.get(key);
    if (!pending) {
      pending = wallet
        .usageSince(owner, { today: day })
        .then(({ today }) => {
          const count = { day: day.getTime(), used: today.requests, readAt: now };
          counts.delete(key);
          if (counts.size >= maxOwners) counts.delete(counts.keys().next().value!);
          counts.set(key, count);
          return count;
        })
        .finally(() => reading.delete(key));
      reading.set(key, pending);
    }
    return pending;
  }

  return {
    /** Counts one request of the owner; 429 QUOTA_EXCEEDED (bucket `dailyRequests`) once today's limit is reached. */
    async admit(owner: WalletOwner, limits: PlanLimits): Promise<void> {
      if (limits.dailyRequests === null) return;
      const now = clock.now();
      const day = startOfUtcDay(now);
      const count = await countOf(owner, ownerKeyOf(owner), day, now.getTime());
      if (count.used >= limits.dailyRequests) {
        const resetsAt = new Date(day.getTime() + DAY_MS).toISOString();
        throw new AppError(
          429,
          'QUOTA_EXCEEDED',
          `Daily request limit reached: your plan "${limits.planName}" allows ${limits.dailyRequests} AI requests a day (UTC) and ${count.used} were made today. It resets at ${resetsAt}; upgrade your plan for more.`,
          { bucket: 'dailyRequests', limit: limits.dailyRequests, used: count.used, resetsAt },
        );
      }
      count.used++;
    },
  };
}

export type DailyRequestLimit = ReturnType<typeof createDailyRequestLimit>;

/**
 * The plan's `concurrentJobs`, inside the transaction that creates the job: the owner's job creations are serialised
 * until that transaction commits (see `JobsService.openJobsLocked`), so parallel submits cannot exceed the limit.
 * 429 QUOTA_EXCEEDED (bucket `concurrentJobs`) when the owner has that many jobs QUEUED or RUNNING.
 */
export async function admitJob(jobs: Pick<JobsService, 'openJobsLocked'>, tx: Tx, owner: JobOwner, limits: PlanLimits): Promise<void> {
  if (limits.concurrentJobs === null) return;
  const open = await jobs.openJobsLocked(tx, owner);
  if (open >= limits.concurrentJobs) {
    throw new AppError(
      429,
      'QUOTA_EXCEEDED',
      `Concurrent job limit reached: your plan "${limits.planName}" runs ${limits.concurrentJobs} job${limits.concurrentJobs === 1 ? '' : 's'} at a time and ${open} ${open === 1 ? 'is' : 'are'} queued or running. Wait for one to finish, cancel one, or upgrade your plan.`,
      { bucket: 'concurrentJobs', limit: limits.concurrentJobs, open },
    );
  }
}
