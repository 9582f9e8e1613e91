import type { Principal } from '../../platform/auth/plugin.js';
import { AppError, forbidden } from '../../platform/http/errors.js';
import type { GatewayModel } from '../catalog/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { WalletOwner } from '../wallet/service.js';
import { planLimitsOf, type DailyRequestLimit, type PlanLimits } from './plan-limits.js';

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
