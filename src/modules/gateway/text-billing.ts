import { AppError } from '../../platform/http/errors.js';
import type { CatalogService, GatewayModel, UsageUnits } from '../catalog/service.js';
import { upstreamToAppError } from './errors.js';
import { fallbackMetadata } from './fallback-loop.js';
import type { Metered } from './metering-types.js';
import { messageText, UpstreamError, type ChatMessage, type ThinkingBlock, type TokenUsage, type ToolCall } from './providers/types.js';
import type { Prepared, TextAnswer, TextGatewayDeps } from './text-types.js';
import { countAnswerTokens } from './tokens.js';

type BillingDeps = Pick<TextGatewayDeps, 'db' | 'logger' | 'catalog' | 'metering' | 'pool'>;

function lastUserText(messages: ChatMessage[]): string {
  const last = [...messages].reverse().find((m) => m.role === 'user') ?? messages.at(-1);
  return last ? messageText(last) : '';
}

type TokenClasses = Pick<TokenUsage, 'cachedInputTokens' | 'cacheWriteTokens' | 'cacheWrite1hTokens' | 'reasoningTokens'>;

/** The token classes a provider reported beside the totals (only the non-zero ones). */
function tokenClassesOf(usage: TokenUsage): TokenClasses {
  const classes: TokenClasses = {};
  if (usage.cachedInputTokens) classes.cachedInputTokens = usage.cachedInputTokens;
  if (usage.cacheWriteTokens) classes.cacheWriteTokens = usage.cacheWriteTokens;
  // A part of the cache writes (priced at the 1-hour write price), so never without them.
  if (usage.cacheWrite1hTokens && usage.cacheWriteTokens) classes.cacheWrite1hTokens = Math.min(usage.cacheWrite1hTokens, usage.cacheWriteTokens);
  if (usage.reasoningTokens) classes.reasoningTokens = usage.reasoningTokens;
  return classes;
}

/** What the library keeps of an answer: its text, and the tools it called (by name and arguments). */
const generationOutput = (text: string, toolCalls: ToolCall[] | undefined) =>
  toolCalls?.length ? { text, toolCalls: toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })) } : { text };

const baseMetadata = (p: Prepared, extra: Record<string, unknown>) => ({
  modelSlug: p.model.slug,
  reservedTokens: p.reservedTokens,
  maxTokens: p.maxTokens,
  ...(p.trimmedMessages > 0 ? { trimmedMessages: p.trimmedMessages } : {}),
  ...(p.principal.apiKeyId ? { apiKeyId: p.principal.apiKeyId } : {}),
  ...fallbackMetadata(p.fallbackFrom),
  ...extra,
});

/**
 * Bills the real usage: settle, usage record and history item in one transaction, so the charge happens
 * exactly once with its records. A usage the provider did not report is counted from the delivered text.
 */
export async function finalize(
  deps: BillingDeps,
  p: Prepared,
  outcome: {
    text: string;
    toolCalls?: ToolCall[];
    thinking?: ThinkingBlock[];
    usage: TokenUsage | null;
    finishReason: string;
    accountId: string | null;
    status: 'SUCCESS' | 'PARTIAL';
    /** The text went out as it came (a stream): it is charged even if the reservation was closed meanwhile. */
    delivered?: boolean;
    extra?: Record<string, unknown>;
  },
): Promise<TextAnswer> {
  const { metering, pool } = deps;
  const measured = outcome.usage ?? { inputTokens: p.inputTokens, outputTokens: countAnswerTokens(outcome.text, outcome.toolCalls) };
  const price = await priceOrReservation(deps, p.model, measured, p, 'usage');
  const classes = tokenClassesOf(measured);
  const answerOf = (chargedTokens: number): TextAnswer => ({
    text: outcome.text,
    ...(outcome.toolCalls?.length ? { toolCalls: outcome.toolCalls } : {}),
    ...(outcome.thinking?.length ? { thinking: outcome.thinking } : {}),
    ...(p.ignored?.length ? { ignored: p.ignored } : {}),
    usage: Object.assign({ inputTokens: measured.inputTokens, outputTokens: measured.outputTokens, creditsConsumed: chargedTokens }, classes),
    model: p.model.slug,
    requestId: p.requestId,
    finishReason: outcome.finishReason,
  });
  // One statement charges the answer with its records, so there is no moment when a delivered answer is known only
  // to this process (a crash before it leaves the reservation open and refunded, as for a call never answered).
  const settling = performance.now();
  const { chargedTokens } = await metering.settleNow(p.metered, {
    status: outcome.status,
    delivered: outcome.delivered,
    chargeTokens: price.tokens,
    providerCostCents: price.providerCostCents,
    inputUnits: measured.inputTokens,
    outputUnits: measured.outputTokens,
    accountId: outcome.accountId,
    metadata: baseMetadata(p, {
      usageSource: outcome.usage ? 'provider' : 'counted',
      tokens: {
        input: measured.inputTokens,
        cachedInput: classes.cachedInputTokens ?? 0,
        cacheWrite: classes.cacheWriteTokens ?? 0,
        ...(classes.cacheWrite1hTokens ? { cacheWrite1h: classes.cacheWrite1hTokens } : {}),
        output: measured.outputTokens,
        reasoning: classes.reasoningTokens ?? 0,
      },
      finishReason: outcome.finishReason,
      ...(outcome.toolCalls?.length ? { toolCalls: outcome.toolCalls.map((c) => c.name) } : {}),
      providerCostMicros: price.providerCostMicros,
      currency: price.currency,
      // The phases known before the settlement (auth, route, reserve, upstream): the gateway's cost beside the provider's.
      ...(p.call.timing ? { timing: p.call.timing.toJSON() } : {}),
      ...outcome.extra,
    }),
    generation:
      p.call.saveToHistory && outcome.status === 'SUCCESS'
        ? { kind: 'TEXT', prompt: lastUserText(p.call.messages), output: generationOutput(outcome.text, outcome.toolCalls) }
        : null,
    response: outcome.status === 'SUCCESS' && p.call.answerBody ? (settled) => p.call.answerBody!(answerOf(settled.chargedTokens)) : undefined,
  });
  p.call.timing?.add('settle', performance.now() - settling);
  if (outcome.accountId) pool.recordSpend(outcome.accountId, price.providerCostMicros);
  p.span.answered({
    responseModel: p.model.upstreamModel,
    finishReason: outcome.finishReason,
    usage: measured,
    chargedTokens,
    output: () => ({ text: outcome.text, ...(outcome.toolCalls?.length ? { toolCalls: outcome.toolCalls } : {}) }),
  });
  return answerOf(chargedTokens);
}

/** A call that produced nothing billable: full refund and a FAILED (or TIMEOUT) usage record. */
export function fail(deps: BillingDeps, p: Prepared, err: unknown): Promise<unknown> {
  p.span.failed(err);
  return refundFailed(
    deps,
    { metered: p.metered, modelSlug: p.model.slug, metadata: baseMetadata(p, {}), internalMessage: 'The generation failed on our side.' },
    err,
  );
}

/**
 * The usage priced for `model`; when the model lost its price mid-call, what was reserved rather than nothing.
 * `what` names what was priced in the log line.
 */
export async function priceOrReservation(
  deps: Pick<BillingDeps, 'catalog' | 'logger'>,
  model: GatewayModel,
  usage: UsageUnits,
  reservation: { reservedTokens: number; requestId: string },
  what: string,
): ReturnType<CatalogService['priceUsage']> {
  try {
    return await deps.catalog.priceUsage(model, usage);
  } catch (err) {
    deps.logger.error({ err, model: model.slug, requestId: reservation.requestId }, `pricing the ${what} failed; charging the reservation`);
    return { tokens: reservation.reservedTokens, providerCostCents: 0, providerCostMicros: 0, currency: 'USD' };
  }
}

/**
 * Refunds a metered call in full with a FAILED (or TIMEOUT) usage record, and answers the error to throw: an
 * upstream outcome as the spec's answer; anything else as it is, recorded as a 500 with `internalMessage`.
 */
export async function refundFailed(
  deps: Pick<BillingDeps, 'db' | 'logger' | 'metering'>,
  call: { metered: Metered; modelSlug: string; metadata: Record<string, unknown>; internalMessage: string },
  err: unknown,
): Promise<unknown> {
  // Upstream outcomes become the spec's answers; anything else is our own failure (500, details logged only).
  const known = err instanceof UpstreamError || err instanceof AppError;
  const appError = known ? upstreamToAppError(err, call.modelSlug) : new AppError(500, 'INTERNAL', call.internalMessage);
  try {
    await deps.db.transaction((tx) => deps.metering.refund(tx, call.metered, appError, call.metadata));
  } catch (releaseError) {
    // The sweeper refunds an open reservation later; the caller still gets the real error.
    deps.logger.error({ err: releaseError, requestId: call.metered.requestId }, 'releasing a failed reservation failed');
  }
  return known ? appError : err;
}
