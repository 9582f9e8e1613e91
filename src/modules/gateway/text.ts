import type { Principal } from '../../platform/auth/plugin.js';
import { badRequest } from '../../platform/http/errors.js';
import type { SseStream } from '../../platform/http/sse.js';
import type { GatewayModel } from '../catalog/service.js';
import { startCallSpan } from './call-span.js';
import type { MeteredRequest } from './metering-scope.js';
import { withServerInstruction } from './instructions.js';
import { TEXT_PARAMETERS, type ChatMessage, type TextRequest } from './providers/types.js';
import { withFallbacks } from './text-fallbacks.js';
import { asStream, finalizeAnswer, pump } from './text-stream.js';
import type { Prepared, Sizing, TextAnswer, TextCall, TextGatewayDeps, TextOptions } from './text-types.js';
import { checkCapabilities, checkImageUrls, checkThinkingToolChoice, leftOutNames, hintsLeftOut } from './text-capabilities.js';
import { budgetWithin, reasoningModeOf, thinkingMaxTokens, translateReasoning } from './reasoning.js';
import { countMessageTokens, countTextTokens, countToolTokens, messageTokensAtLeast, messageTokensAtMost } from './tokens.js';
import { imageTokenRule } from './providers/index.js';

export const DEFAULT_MAX_TOKENS = 2048;
/** Chat history replay: a quarter of the context window, capped at 24,000 tokens; system text is never trimmed. */
export const HISTORY_CAP_TOKENS = 24_000;

/** The JSON answer of a text call (and what its Idempotency-Key replays). */
export const textResponse = (answer: TextAnswer) => ({
  text: answer.text,
  usage: answer.usage,
  model: answer.model,
  requestId: answer.requestId,
  finishReason: answer.finishReason,
  ...(answer.refusal ? { refusal: answer.refusal } : {}),
  ...(answer.toolCalls?.length ? { toolCalls: answer.toolCalls } : {}),
  ...(answer.thinking?.length ? { thinking: answer.thinking } : {}),
  ...(answer.ignored?.length ? { ignored: answer.ignored } : {}),
});

/** The optional parameters a body sets (the keys it leaves out stay out). */
export function textOptionsOf(body: TextOptions): TextOptions {
  const options: Record<string, unknown> = {};
  for (const key of [...TEXT_PARAMETERS, 'reasoning', 'fieldNames'] as const) if (body[key] !== undefined) options[key] = body[key];
  return options;
}

/** The header naming the request fields left out rather than refused. */
export const IGNORED_HEADER = 'x-storefront-ignored';

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

/**
 * The text gateway: checks, sizing and reservation here; the fallback models (text-fallbacks.ts), the streaming
 * (text-stream.ts) and the billing (text-billing.ts) in their own files.
 */
export function createTextGateway(deps: TextGatewayDeps) {
  const { logger, catalog, metering, pool } = deps;

  /** Every check before a token moves, in the spec's order; ends with the reservation. */
  async function prepare(principal: Principal, call: TextCall, request: MeteredRequest): Promise<Prepared> {
    const { requestId } = request;
    const started = performance.now();
    const sized = await size(principal, call, await catalog.resolveForGateway(call.modelSlug));
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
      const metered = await metering.reserve(
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

  /** Runs the upstream call in the call's span, timed as `phase` (a fallback's attempts add up). */
  const upstream = <T>(p: Prepared, phase: 'upstream' | 'upstream-ttfb', fn: () => Promise<T>): Promise<T> =>
    p.span.run(() => (p.call.timing ? p.call.timing.measure(phase, fn) : fn()));

  /** The checks and the sizing of the call on one model: plan and key access, history, output room, the estimate. */
  async function size(principal: Principal, call: TextCall, model: GatewayModel): Promise<Sizing> {
    const wrongType = call.accepts(model);
    if (wrongType) throw badRequest(wrongType, { model: model.slug, type: model.type });
    const access = await metering.access(principal, model);
    const adapter = pool.adapterOf(model.providerSlug);
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

    const reservedTokens = await catalog.estimateTokens(model, { kind: 'text', inputTokens, maxOutputTokens: maxTokens });
    // Both keys always set: a fallback model's sizing replaces the first model's (text-fallbacks.ts merges them).
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

  /** The upstream request as the prepared call decided it: the parameters set, without the sampling hints it left out. */
  const upstreamRequest = (p: Prepared): TextRequest => {
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
  };

  return {
    /** A whole answer at once. */
    async generate(principal: Principal, call: TextCall, request: MeteredRequest): Promise<TextAnswer> {
      const { p, value: result } = await withFallbacks(deps, size, await prepare(principal, call, request), (p) =>
        upstream(p, 'upstream', () => pool.run(p.model.providerSlug, (adapter, credential) => adapter.generateText(credential, upstreamRequest(p)))),
      );
      const { refusal, ...outcome } = result.value;
      return finalizeAnswer(deps, p, { accountId: result.accountId, status: 'SUCCESS', ...outcome }, refusal);
    },

    /**
     * A streamed answer. Checks and the upstream connection happen before any byte is sent, so those failures are
     * ordinary JSON errors. Once streaming, a client that leaves does not stop the metering: the upstream answer is
     * read to its end and settled once. An upstream that breaks midway ends the stream with an `error` event and
     * is billed for the text delivered so far (counted with the tokenizer, never from error text).
     */
    async stream(
      principal: Principal,
      call: TextCall,
      request: MeteredRequest,
      open: (headers: Record<string, string>) => SseStream,
    ): Promise<{ answer: TextAnswer | null; sse: SseStream }> {
      const { requestId } = request;
      // A fallback may answer only until the stream opens: once a byte is sent, the call stays with its model.
      const { p, value: opened } = await withFallbacks(deps, size, await prepare(principal, call, request), (p) => {
        const streamingSupported = p.model.capabilities.flags?.streaming !== false;
        // Timed to the upstream's first answer (its headers); pump times the whole stream as `upstream`.
        return upstream(p, 'upstream-ttfb', () =>
          pool.run(p.model.providerSlug, async (adapter, credential) =>
            streamingSupported ? adapter.streamText(credential, upstreamRequest(p)) : asStream(await adapter.generateText(credential, upstreamRequest(p))),
          ),
        );
      });

      const sse = open(p.ignored?.length ? { [IGNORED_HEADER]: p.ignored.join(', ') } : {});
      try {
        return { answer: await pump(deps, p, opened, sse), sse };
      } catch (err) {
        // Not the charge (pump answers its failures itself): the reservation stays open, its request's key or the
        // sweeper closes it on the progress recorded so far, which is all the client is told.
        logger.error({ err, requestId }, 'finishing a stream failed');
        await sse.send({
          type: 'error',
          error: {
            code: 'INTERNAL',
            message:
              'Something went wrong on our side while finishing the answer, which is incomplete. It is charged at most for the text delivered (GET /v1/usage shows the charge).',
            chargedTokens: null,
          },
        });
        sse.end();
        return { answer: null, sse };
      }
    },
  };
}

export type TextGateway = ReturnType<typeof createTextGateway>;
