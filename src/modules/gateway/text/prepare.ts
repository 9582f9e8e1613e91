import type { Principal } from '../../../platform/auth/plugin.js';
import { badRequest } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import { checkAccess } from '../metering/access.js';
import type { MeteredRequest } from '../metering/idempotency.js';
import { imageTokenRule } from '../providers/index.js';
import { TEXT_PARAMETERS, type ChatMessage, type TextRequest } from '../providers/types.js';
import { startCallSpan } from '../routing/call-span.js';
import { fallbackMetadata } from '../routing/fallback-loop.js';
import { checkCapabilities, checkImageUrls, checkThinkingToolChoice, hintsLeftOut, leftOutNames } from './capabilities.js';
import { withServerInstruction } from './instructions.js';
import { budgetWithin, reasoningModeOf, thinkingMaxTokens, translateReasoning } from './reasoning.js';
import { countMessageTokens, countTextTokens, countToolTokens, messageTokensAtLeast, messageTokensAtMost } from './tokens.js';
import type { Prepared, Sizing, TextCall, TextGatewayDeps, TextOptions } from './types.js';

export const DEFAULT_MAX_TOKENS = 2048;
/** Chat history replay: a quarter of the context window, capped at 24,000 tokens; system text is never trimmed. */
export const HISTORY_CAP_TOKENS = 24_000;

/** Every check before a token moves, in the spec's order; ends with the reservation. */
export async function prepare(deps: TextGatewayDeps, principal: Principal, call: TextCall, request: MeteredRequest): Promise<Prepared> {
  const { requestId } = request;
  const started = performance.now();
  const sized = await size(deps, principal, call, await deps.catalog.resolveForGateway(call.modelSlug));
  const reserving = performance.now();
  call.timing?.add('route', reserving - started);
  const span = startCallSpan({
    operation: 'chat',
    providerSlug: sized.model.providerSlug,
    model: sized.model.slug,
    requestId,
    parameters: { maxTokens: sized.maxTokens, temperature: call.temperature, ...call.options },
    input: sized.messages,
    captureContent: deps.captureContent,
  });
  try {
    const metered = await deps.metering.reserve(
      principal,
      { model: sized.model, operation: call.operation, tokens: sized.reservedTokens, requestId, started, key: request.key },
      { access: sized.access },
    );
    call.timing?.add('reserve', performance.now() - reserving);
    return { call, principal, metered, requestId, started, span, ...sized };
  } catch (err) {
    span.failed(err);
    throw err;
  }
}

/**
 * The checks and the sizing of the call on one model (the one asked for, or a fallback): plan and key access, what the
 * model can honour, history, output room, and the tokens to reserve.
 */
export async function size(deps: TextGatewayDeps, principal: Principal, call: TextCall, model: GatewayModel): Promise<Sizing> {
  const wrongType = call.accepts(model);
  if (wrongType) throw badRequest(wrongType, { model: model.slug, type: model.type });
  const access = await checkAccess(deps, principal, model);
  const adapter = deps.pool.adapterOf(model.providerSlug);
  const options = call.options ?? {};
  if (adapter) checkCapabilities({ model, adapter }, options, call.messages);
  await checkImageUrls(deps.outbound, call.messages);

  // History first (system text is never trimmed), then the server instruction in front. A conversation with tool
  // calls is sent whole: cutting it could separate a tool result from its call.
  const budget = Math.min(HISTORY_CAP_TOKENS, model.maxContextTokens ? Math.floor(model.maxContextTokens / 4) : HISTORY_CAP_TOKENS);
  const fitted = options.tools || call.messages.some((m) => m.role === 'tool') ? { messages: call.messages, trimmed: 0 } : fitHistory(call.messages, budget);
  const messages = withServerInstruction(model, fitted.messages, call.instruction);
  // The lowest count the characters allow, first: a body that surely cannot fit is refused before it is tokenized.
  const atLeast = messageTokensAtLeast(messages);
  if (model.maxContextTokens && atLeast >= model.maxContextTokens) {
    throw badRequest(`The messages are at least ${atLeast} tokens; the model "${model.slug}" reads at most ${model.maxContextTokens}. Shorten them.`, [
      { field: 'messages', message: 'are too long for this model' },
    ]);
  }
  const inputTokens = countMessageTokens(messages, imageTokenRule(model.providerSlug)) + countToolTokens(options.tools) + responseFormatTokens(options);
  const modelMax = model.maxOutputTokens ?? Number.POSITIVE_INFINITY;
  if (call.maxTokens !== undefined && call.maxTokens > modelMax) {
    throw badRequest(`maxTokens ${call.maxTokens} is more than the model "${model.slug}" can write (${modelMax}).`, [
      { field: 'maxTokens', message: `must be at most ${modelMax}` },
    ]);
  }
  let maxTokens = call.maxTokens ?? Math.min(DEFAULT_MAX_TOKENS, modelMax);
  const room = model.maxContextTokens ? model.maxContextTokens - inputTokens : Number.POSITIVE_INFINITY;
  if (room <= 0) {
    throw badRequest(`The messages are about ${inputTokens} tokens; the model "${model.slug}" reads at most ${model.maxContextTokens}. Shorten them.`, [
      { field: 'messages', message: 'are too long for this model' },
    ]);
  }
  const reasoningField = call.reasoningField ?? 'reasoning';
  const asked = options.reasoning;
  const reasoningMode = asked ? reasoningModeOf(model, adapter?.kind) : null;
  let reasoning = asked && reasoningMode ? translateReasoning(asked, reasoningMode, model) : null;
  // A model without a reasoning control answers without one, and the header says so (the charge does not change).
  let thinkingLeftOut = Boolean(asked && !reasoningMode);
  if (asked && reasoning?.budgetTokens !== undefined) {
    if (asked.withinMaxTokens) {
      // Anthropic's surface: max_tokens is the whole output, and the budget goes under it (reasoning.ts).
      reasoning = budgetWithin(reasoning.budgetTokens, asked.budgetTokens !== undefined, Math.min(maxTokens, room), model);
      thinkingLeftOut = reasoning === null;
    } else {
      maxTokens = thinkingMaxTokens(reasoning.budgetTokens, maxTokens, Math.min(modelMax, room), model);
    }
  }
  const thinking = adapter?.kind === 'anthropic' && reasoning?.budgetTokens !== undefined;
  if (thinking) checkThinkingToolChoice(model, options, reasoningField);
  const leftOut = hintsLeftOut({ model, adapter: adapter ?? undefined }, call, thinking);
  const ignored = [...(thinkingLeftOut ? [reasoningField] : []), ...leftOutNames(leftOut, options)];
  if (maxTokens > room) {
    if (call.maxTokens !== undefined && !reasoning?.budgetTokens) {
      throw badRequest(
        `The messages (about ${inputTokens} tokens) plus maxTokens ${maxTokens} exceed the model's context of ${model.maxContextTokens} tokens. Lower maxTokens to ${room} or shorten the messages.`,
        [{ field: 'maxTokens', message: `must be at most ${room} with these messages` }],
      );
    }
    maxTokens = room;
  }

  const reservedTokens = await deps.catalog.estimateTokens(model, { kind: 'text', inputTokens, maxOutputTokens: maxTokens });
  // Both keys always set: a fallback model's sizing replaces the first model's (fallbacks.ts merges them).
  return {
    model,
    access,
    messages,
    maxTokens,
    inputTokens,
    trimmedMessages: fitted.trimmed,
    reservedTokens,
    reasoning: reasoning ?? undefined,
    ignored: ignored.length ? ignored : undefined,
    leftOut: leftOut.length ? leftOut : undefined,
  };
}

/** Keeps every system message and as much recent conversation as fits `budget` tokens (the last message always). */
export function fitHistory(messages: ChatMessage[], budget: number): { messages: ChatMessage[]; trimmed: number } {
  const system = messages.filter((m) => m.role === 'system');
  const rest = messages.filter((m) => m.role !== 'system');
  if (messageTokensAtMost(rest) <= budget) return { messages: [...system, ...rest], trimmed: 0 };
  let used = 0;
  let keepFrom = rest.length;
  for (let i = rest.length - 1; i >= 0; i--) {
    const cost = countMessageTokens([rest[i]!]);
    if (i < rest.length - 1 && used + cost > budget) break;
    used += cost;
    keepFrom = i;
  }
  return { messages: [...system, ...rest.slice(keepFrom)], trimmed: keepFrom };
}

/** A JSON schema the answer must follow is read by the model like any input. */
const responseFormatTokens = (options: TextOptions) =>
  options.responseFormat?.type === 'json_schema' ? countTextTokens(JSON.stringify(options.responseFormat.schema)) : 0;

/** The upstream request as the prepared call decided it: the parameters set, without the sampling hints it left out. */
export function upstreamRequest(p: Prepared): TextRequest {
  const request: TextRequest = {
    model: p.model.upstreamModel,
    messages: p.messages,
    maxTokens: p.maxTokens,
    temperature: p.call.temperature,
    reasoning: p.reasoning,
  };
  const options = p.call.options ?? {};
  for (const key of TEXT_PARAMETERS) if (options[key] !== undefined) Object.assign(request, { [key]: options[key] });
  for (const hint of p.leftOut ?? []) delete request[hint];
  return request;
}

/** Runs the upstream call in the call's span, timed as `phase` (a fallback's attempts add up). */
export const inCallSpan = <T>(p: Prepared, phase: 'upstream' | 'upstream-ttfb', fn: () => Promise<T>): Promise<T> =>
  p.span.run(() => (p.call.timing ? p.call.timing.measure(phase, fn) : fn()));

/** What every usage record of the prepared call says, with `extra`. */
export const usageMetadata = (p: Prepared, extra: Record<string, unknown>) => ({
  modelSlug: p.model.slug,
  reservedTokens: p.reservedTokens,
  maxTokens: p.maxTokens,
  ...(p.trimmedMessages > 0 ? { trimmedMessages: p.trimmedMessages } : {}),
  ...(p.principal.apiKeyId ? { apiKeyId: p.principal.apiKeyId } : {}),
  ...fallbackMetadata(p.fallbackFrom),
  ...extra,
});
