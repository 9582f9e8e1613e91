import type { Principal } from '../../../platform/auth/plugin.js';
import type { ServerTiming } from '../../../platform/http/server-timing.js';
import type { CatalogService, GatewayModel, UsageUnits } from '../../catalog/service.js';
import { once, type MeteredRequest } from '../metering/idempotency.js';
import { messageText, TEXT_PARAMETERS, type ChatMessage, type TextResult, type ThinkingBlock, type TokenUsage, type ToolCall } from '../providers/types.js';
import type { PoolOutcome } from '../routing/pool.js';
import { fallBack } from './fallbacks.js';
import { cleanEnhanced, enhanceInstruction, normaliseTarget } from './instructions.js';
import { inCallSpan, prepare, upstreamRequest, usageMetadata } from './prepare.js';
import { countAnswerTokens } from './tokens.js';
import type { CallOptions, EnhanceBody, Prepared, TextAnswer, TextBody, TextCall, TextGatewayDeps, TextOptions } from './types.js';

/** The header naming the request fields left out rather than refused. */
export const IGNORED_HEADER = 'x-storefront-ignored';

export const TEXT_ROUTE = 'POST /v1/ai/text';
const ENHANCE_ROUTE = 'POST /v1/ai/enhance/prompt';

const textModelsOnly = (model: GatewayModel) =>
  model.type === 'TEXT' || model.type === 'MULTIMODAL'
    ? null
    : `The model "${model.slug}" is a ${model.type} model; POST /v1/ai/text needs a TEXT or MULTIMODAL model.`;
const multimodalOnly = (model: GatewayModel) =>
  model.type === 'MULTIMODAL'
    ? null
    : `Prompt enhancement needs a multimodal model, and "${model.slug}" is a ${model.type} model. Pick one from GET /v1/models?type=MULTIMODAL.`;

/**
 * The text gateway, top to bottom: `text` runs once per Idempotency-Key (metering/idempotency.ts), `generate` checks,
 * sizes and reserves (prepare.ts), calls the upstream through the pool (routing/pool.ts; the fallback models when the
 * provider is down, fallbacks.ts) and `finalize` settles (metering/metering.ts). Streams are in stream.ts.
 */
export function createTextGateway(deps: TextGatewayDeps) {
  return {
    /** `POST /v1/ai/text` and the SDK-compatible surfaces: the JSON answer, or the stored one for a repeated Idempotency-Key. */
    text: (principal: Principal, body: TextBody, options: CallOptions = {}) =>
      once(deps.idempotency, principal, options, TEXT_ROUTE, body, (request) => generate(deps, principal, textCallOf(body, options.timing), request, asIs)),

    /** `POST /v1/ai/enhance/prompt`: the prompt rewritten for its target by a multimodal model. */
    enhancePrompt(principal: Principal, body: EnhanceBody, options: CallOptions = {}) {
      const call: TextCall = {
        operation: 'prompt.enhance',
        modelSlug: body.model,
        messages: [{ role: 'user', content: body.prompt }],
        instruction: enhanceInstruction(normaliseTarget(body.target)),
        accepts: multimodalOnly,
        saveToHistory: false,
        timing: options.timing,
      };
      const enhanced = (answer: TextAnswer) => ({ enhanced: cleanEnhanced(answer.text) || answer.text.trim() || body.prompt });
      return once(deps.idempotency, principal, options, ENHANCE_ROUTE, body, (request) => generate(deps, principal, call, request, enhanced));
    },
  };
}

/** A text route's call from its body. */
export const textCallOf = (body: TextBody, timing: ServerTiming | undefined): TextCall => ({
  operation: 'text.generate',
  modelSlug: body.model,
  messages: body.messages,
  maxTokens: body.maxTokens,
  temperature: body.temperature,
  options: textOptionsOf(body),
  instruction: body.serverInstruction === false ? null : undefined,
  ...(body.reasoningField ? { reasoningField: body.reasoningField } : {}),
  accepts: textModelsOnly,
  saveToHistory: true,
  timing,
});

/** The optional parameters a body sets (the keys it leaves out stay out). */
export function textOptionsOf(body: TextOptions): TextOptions {
  const options: Record<string, unknown> = {};
  for (const key of [...TEXT_PARAMETERS, 'reasoning', 'fieldNames'] as const) if (body[key] !== undefined) options[key] = body[key];
  return options;
}

/** The answer as the text routes give it. */
export const asIs = (answer: TextAnswer): TextAnswer => answer;

/**
 * A whole answer at once, as `reply` shapes it from the text answer: the call prepared and reserved, run on its
 * model's upstream, and settled.
 */
export async function generate<B extends Record<string, unknown>>(
  deps: TextGatewayDeps,
  principal: Principal,
  call: TextCall,
  request: MeteredRequest,
  reply: (answer: TextAnswer) => B,
): Promise<B> {
  const first = await prepare(deps, principal, call, request);
  const attempt = (p: Prepared) =>
    inCallSpan(p, 'upstream', () => deps.pool.run(p.model.providerSlug, (adapter, credential) => adapter.generateText(credential, upstreamRequest(p))));
  let served: { p: Prepared; value: PoolOutcome<TextResult> };
  try {
    served = { p: first, value: await attempt(first) };
  } catch (err) {
    // Every account of the provider failed: the operator's fallback models, in order; anything else is refunded.
    served = await fallBack(deps, first, err, attempt);
  }
  const { p, value } = served;
  const { answer } = await finalize(deps, p, Object.assign({ accountId: value.accountId, status: 'SUCCESS' as const }, value.value), reply);
  return answer!;
}

/** What a call delivered, to bill. */
export interface Delivered {
  text: string;
  /** The model's refusal, apart from the text: carried by the answer, billed like text. */
  refusal?: string;
  toolCalls?: ToolCall[];
  thinking?: ThinkingBlock[];
  usage: TokenUsage | null;
  finishReason: string;
  accountId: string | null;
  status: 'SUCCESS' | 'PARTIAL';
  /** The text went out as it came (a stream): it is charged even if the reservation was closed meanwhile. */
  delivered?: boolean;
  extra?: Record<string, unknown>;
}

/**
 * Bills what the call delivered, exactly once with its records: priced by the catalog, then settled with the usage
 * record, the history item and the Idempotency-Key's answer (metering.settleNow). A usage the provider did not report
 * is counted from the delivered text. A successful call's answer is built once, by the settlement, on what it charged,
 * and shaped by `reply`; a partial one (a stream cut midway) has none.
 */
export async function finalize<B extends Record<string, unknown>>(
  deps: TextGatewayDeps,
  p: Prepared,
  outcome: Delivered,
  reply: (answer: TextAnswer) => B,
): Promise<{ chargedTokens: number; answer: B | null }> {
  const refusal = outcome.refusal || undefined;
  const measured = outcome.usage ?? { inputTokens: p.inputTokens, outputTokens: countAnswerTokens(outcome.text + (refusal ?? ''), outcome.toolCalls) };
  const price = await priceOrReservation(deps, p.model, measured, p, 'usage');
  const classes = tokenClassesOf(measured);
  const answerOf = (chargedTokens: number): TextAnswer => ({
    text: outcome.text,
    usage: Object.assign({ inputTokens: measured.inputTokens, outputTokens: measured.outputTokens, creditsConsumed: chargedTokens }, classes),
    model: p.model.slug,
    requestId: p.requestId,
    finishReason: outcome.finishReason,
    ...(refusal ? { refusal } : {}),
    ...(outcome.toolCalls?.length ? { toolCalls: outcome.toolCalls } : {}),
    ...(outcome.thinking?.length ? { thinking: outcome.thinking } : {}),
    ...(p.ignored?.length ? { ignored: p.ignored } : {}),
  });
  // One statement charges the answer with its records, so there is no moment when a delivered answer is known only
  // to this process (a crash before it leaves the reservation open and refunded, as for a call never answered).
  const settling = performance.now();
  const { chargedTokens, answer } = await deps.metering.settleNow(p.metered, {
    status: outcome.status,
    delivered: outcome.delivered,
    chargeTokens: price.tokens,
    providerCostCents: price.providerCostCents,
    inputUnits: measured.inputTokens,
    outputUnits: measured.outputTokens,
    accountId: outcome.accountId,
    metadata: usageMetadata(p, {
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
      ...(refusal ? { refusal: true } : {}),
    }),
    generation:
      p.call.saveToHistory && outcome.status === 'SUCCESS'
        ? { kind: 'TEXT', prompt: lastUserText(p.call.messages), output: generationOutput(outcome.text, outcome.toolCalls) }
        : null,
    answer: outcome.status === 'SUCCESS' ? (charged) => reply(answerOf(charged.chargedTokens)) : undefined,
  });
  p.call.timing?.add('settle', performance.now() - settling);
  if (outcome.accountId) deps.pool.recordSpend(outcome.accountId, price.providerCostMicros);
  p.span.answered({
    responseModel: p.model.upstreamModel,
    finishReason: outcome.finishReason,
    usage: measured,
    chargedTokens,
    output: () => ({ text: outcome.text, ...(outcome.toolCalls?.length ? { toolCalls: outcome.toolCalls } : {}) }),
  });
  return { chargedTokens, answer };
}

/**
 * The usage priced for `model`; when the model lost its price mid-call, what was reserved rather than nothing.
 * `what` names what was priced in the log line.
 */
export async function priceOrReservation(
  deps: Pick<TextGatewayDeps, 'catalog' | 'logger'>,
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
