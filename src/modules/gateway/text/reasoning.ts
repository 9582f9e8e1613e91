import { badRequest } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import type { ReasoningEffort, ReasoningOption } from '../providers/types.js';

/**
 * How a model takes a reasoning control, from its catalog entry (`capabilities.flags.reasoning`): `effort` (OpenAI's
 * `reasoning_effort`, and compatible providers that document it) or `budget` (Anthropic's `thinking.budget_tokens`).
 * `flags.reasoningEfforts` lists the levels a provider takes when it is fewer than OpenAI's (xAI: low and high).
 */
export type ReasoningMode = 'effort' | 'budget';

/** Anthropic's smallest thinking budget. */
export const MIN_THINKING_BUDGET = 1024;

/** The budget an effort level stands for on a budget model (and back, the nearest level at or above a budget). */
export const EFFORT_BUDGETS: Record<Exclude<ReasoningEffort, 'none'>, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24_576 };

const EFFORT_ORDER: ReasoningEffort[] = ['none', 'minimal', 'low', 'medium', 'high'];

export function reasoningModeOf(model: Pick<GatewayModel, 'capabilities'>, adapterKind: string | undefined): ReasoningMode | null {
  const mode = model.capabilities.flags?.reasoning;
  // The wire terms belong to the adapter: an effort goes to OpenAI-compatible APIs, a budget to Anthropic's.
  if (mode === 'effort' && adapterKind === 'openai') return 'effort';
  if (mode === 'budget' && adapterKind === 'anthropic') return 'budget';
  return null;
}

function effortOfBudget(budget: number): ReasoningEffort {
  const level = (Object.keys(EFFORT_BUDGETS) as (keyof typeof EFFORT_BUDGETS)[]).find((effort) => budget <= EFFORT_BUDGETS[effort]);
  return level ?? 'high';
}

/** The nearest level the provider takes, rounding up (a caller asking for more thinking never gets less). */
function supportedEffort(effort: ReasoningEffort, levels: unknown): ReasoningEffort {
  if (!Array.isArray(levels) || levels.length === 0 || levels.includes(effort)) return effort;
  const from = EFFORT_ORDER.indexOf(effort);
  const above = EFFORT_ORDER.slice(from).find((level) => levels.includes(level));
  return (
    above ??
    EFFORT_ORDER.slice(0, from)
      .reverse()
      .find((level) => levels.includes(level)) ??
    effort
  );
}

/**
 * The control in the model's own terms, or null when there is nothing to send (`none` on a budget model: no
 * thinking). The caller's budget wins over its effort on a budget model, and the effort over the budget on an effort model.
 */
export function translateReasoning(option: ReasoningOption, mode: ReasoningMode, model: Pick<GatewayModel, 'capabilities'>): ReasoningOption | null {
  if (mode === 'effort') {
    const effort = option.effort ?? effortOfBudget(option.budgetTokens ?? EFFORT_BUDGETS.medium);
    return { effort: supportedEffort(effort, model.capabilities.flags?.reasoningEfforts) };
  }
  if (option.budgetTokens !== undefined) {
    if (option.budgetTokens < MIN_THINKING_BUDGET) {
      throw badRequest(`A thinking budget must be at least ${MIN_THINKING_BUDGET} tokens.`, [
        { field: 'reasoning.budgetTokens', message: `must be at least ${MIN_THINKING_BUDGET}` },
      ]);
    }
    return { budgetTokens: option.budgetTokens };
  }
  const effort = option.effort ?? 'medium';
  return effort === 'none' ? null : { budgetTokens: EFFORT_BUDGETS[effort] };
}

/**
 * The output room of a budget model's call: the thinking budget plus the answer's own room, within what the model can
 * write. The reservation is sized on this total, so the thinking is paid for up front like any output.
 */
export function thinkingMaxTokens(budget: number, answerTokens: number, limit: number, model: Pick<GatewayModel, 'slug'>): number {
  const total = Math.min(limit, budget + answerTokens);
  if (total <= budget) {
    throw badRequest(
      `A thinking budget of ${budget} tokens leaves no room for the answer on "${model.slug}" (at most ${limit} output tokens here). Lower the budget.`,
      [{ field: 'reasoning.budgetTokens', message: `must be below ${limit}` }],
    );
  }
  return total;
}

/**
 * The thinking budget of a call whose maxTokens caps the whole output, thinking included (Anthropic's max_tokens, "the
 * budget counts towards max_tokens" and must be at least 1024 and below it). `cap` is that maxTokens within the model's
 * context. A budget the caller set that does not fit is refused, as Anthropic refuses it. One that stands for an effort
 * (adaptive thinking, where the model decides how much to think) is lowered to fit, and when not even the smallest
 * budget fits the call goes without thinking, as an adaptive call may: null.
 */
export function budgetWithin(budget: number, callerSet: boolean, cap: number, model: Pick<GatewayModel, 'slug'>): ReasoningOption | null {
  if (budget < cap) return { budgetTokens: budget };
  if (callerSet) {
    throw badRequest(
      `A thinking budget of ${budget} tokens must be below the ${cap} output tokens this call can have on "${model.slug}" (max_tokens, which includes the thinking, within the model's context). Lower the budget or shorten the messages.`,
      [{ field: 'thinking.budget_tokens', message: `must be below ${cap}` }],
    );
  }
  return cap - 1 >= MIN_THINKING_BUDGET ? { budgetTokens: cap - 1 } : null;
}
