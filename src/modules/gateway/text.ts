import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../../platform/auth/plugin.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, badRequest } from '../../platform/http/errors.js';
import type { SseStream } from '../../platform/http/sse.js';
import type { CatalogService, GatewayModel } from '../catalog/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { WalletService } from '../wallet/service.js';
import { streamErrorEvent, upstreamToAppError } from './errors.js';
import { withServerInstruction } from './instructions.js';
import type { Fallbacks } from './fallbacks.js';
import type { Access } from './access.js';
import type { Metered, Metering } from './metering.js';
import type { UpstreamPool } from './pool.js';
import { UpstreamError, type ChatMessage, type TextResult, type TextStream, type TokenUsage } from './providers/types.js';
import { countMessageTokens, countTextTokens, messageTokensAtMost } from './tokens.js';

export const DEFAULT_MAX_TOKENS = 2048;
/** Chat history replay: a quarter of the context window, capped at 24,000 tokens; system text is never trimmed. */
export const HISTORY_CAP_TOKENS = 24_000;

export interface TextGatewayDeps {
  db: Db;
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'estimateTokens' | 'priceUsage' | 'getById'>;
  subscriptions: Pick<SubscriptionsService, 'activeFor'>;
  plans: Pick<PlansService, 'isModelAllowed' | 'featuresOf'>;
  wallet: Pick<WalletService, 'markInFlight'>;
  metering: Metering;
  pool: UpstreamPool;
  /** Operators' fallback models: tried in order when every account of the model's provider failed. */
  fallbacks?: Pick<Fallbacks, 'idsOf'>;
}

export interface TextCall {
  operation: 'text.generate' | 'prompt.enhance';
  modelSlug: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  /** Which model types the route accepts, and the 400 to give otherwise. */
  accepts: (model: GatewayModel) => string | null;
  /** The instruction placed first (default: the per-type server instruction). */
  instruction?: string;
  /** Save the answer to the caller's text history. */
  saveToHistory: boolean;
  /** The route's JSON answer: stored for the Idempotency-Key in the settling transaction. */
  answerBody?: (answer: TextAnswer) => Record<string, unknown>;
}

export interface TextAnswer {
  text: string;
  usage: { inputTokens: number; outputTokens: number; creditsConsumed: number };
  model: string;
  requestId: string;
  finishReason: string;
}

/** The JSON answer of a text call (and what its Idempotency-Key replays). */
export const textResponse = (answer: TextAnswer) => ({ text: answer.text, usage: answer.usage, model: answer.model, requestId: answer.requestId, finishReason: answer.finishReason });

interface Prepared {
  call: TextCall;
  principal: Principal;
  model: GatewayModel;
  metered: Metered;
  requestId: string;
  messages: ChatMessage[];
  maxTokens: number;
  inputTokens: number;
  trimmedMessages: number;
  reservedTokens: number;
  started: number;
  /** The model the caller asked for, when a fallback serves the call instead. */
  fallbackFrom?: { model: string; error: unknown };
}

type Sizing = Pick<Prepared, 'model' | 'messages' | 'maxTokens' | 'inputTokens' | 'trimmedMessages' | 'reservedTokens'> & { access: Access };

/** Every account of the provider failed with a retryable error: the one outcome a fallback model may answer. */
const providerDown = (err: unknown) => err instanceof AppError && err.code === 'PROVIDER_UNAVAILABLE';

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

const lastUserText = (messages: ChatMessage[]) => [...messages].reverse().find((m) => m.role === 'user')?.content ?? messages.at(-1)?.content ?? '';

export function createTextGateway(deps: TextGatewayDeps) {
  const { db, logger, catalog, wallet, metering, pool } = deps;

  /** Every check before a token moves, in the spec's order; ends with the reservation. */
  async function prepare(principal: Principal, call: TextCall, requestId: string): Promise<Prepared> {
    const started = performance.now();
    const sized = await size(principal, call, await catalog.resolveForGateway(call.modelSlug));
    const metered = await metering.reserve(principal, { model: sized.model, operation: call.operation, tokens: sized.reservedTokens, requestId, started }, { access: sized.access });
    return { call, principal, metered, requestId, started, ...sized };
  }

  /** The checks and the sizing of the call on one model: plan and key access, history, output room, the estimate. */
  async function size(principal: Principal, call: TextCall, model: GatewayModel): Promise<Sizing> {
    const wrongType = call.accepts(model);
    if (wrongType) throw badRequest(wrongType, { model: model.slug, type: model.type });
    const access = await metering.access(principal, model);

    // History first (system text is never trimmed), then the server instruction in front.
    const budget = Math.min(HISTORY_CAP_TOKENS, model.maxContextTokens ? Math.floor(model.maxContextTokens / 4) : HISTORY_CAP_TOKENS);
    const fitted = fitHistory(call.messages, budget);
    const messages = withServerInstruction(model, fitted.messages, call.instruction);
    const inputTokens = countMessageTokens(messages);
    const modelMax = model.maxOutputTokens ?? Number.POSITIVE_INFINITY;
    if (call.maxTokens !== undefined && call.maxTokens > modelMax) {
      throw badRequest(`maxTokens ${call.maxTokens} is more than the model "${model.slug}" can write (${modelMax}).`, [{ field: 'maxTokens', message: `must be at most ${modelMax}` }]);
    }
    let maxTokens = call.maxTokens ?? Math.min(DEFAULT_MAX_TOKENS, modelMax);
    if (model.maxContextTokens) {
      const room = model.maxContextTokens - inputTokens;
      if (room <= 0) {
        throw badRequest(`The messages are about ${inputTokens} tokens; the model "${model.slug}" reads at most ${model.maxContextTokens}. Shorten them.`, [
          { field: 'messages', message: 'are too long for this model' },
        ]);
      }
      if (maxTokens > room) {
        if (call.maxTokens !== undefined) {
          throw badRequest(`The messages (about ${inputTokens} tokens) plus maxTokens ${maxTokens} exceed the model's context of ${model.maxContextTokens} tokens. Lower maxTokens to ${room} or shorten the messages.`, [
            { field: 'maxTokens', message: `must be at most ${room} with these messages` },
          ]);
        }
        maxTokens = room;
      }
    }

    const reservedTokens = await catalog.estimateTokens(model, { kind: 'text', inputTokens, maxOutputTokens: maxTokens });
    return { model, access, messages, maxTokens, inputTokens, trimmedMessages: fitted.trimmed, reservedTokens };
  }

  /**
   * The call moved to a fallback model: checked and sized for it (the caller's plan and key must allow it), its
   * reservation raised when the fallback costs more. Null when this fallback cannot take the call (skip it).
   */
  async function switchTo(p: Prepared, fallbackId: string, error: unknown): Promise<Prepared | null> {
    try {
      const entry = await catalog.getById(fallbackId);
      if (!entry) return null;
      const sized = await size(p.principal, p.call, await catalog.resolveForGateway(entry.row.slug));
      const metered = await metering.switchModel(p.principal, p.metered, sized.model, sized.reservedTokens);
      return Object.assign({}, p, sized, { reservedTokens: metered.reservedTokens ?? sized.reservedTokens, metered, fallbackFrom: p.fallbackFrom ?? { model: p.model.slug, error } });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      logger.info({ requestId: p.requestId, fallback: fallbackId, code: err.code }, 'fallback model cannot take the call; trying the next');
      return null;
    }
  }

  /**
   * Runs `attempt` on the call's model; when every account of its provider fails with a retryable error, on the
   * model's fallbacks in the operator's order (those the caller's plan and key allow). Anything else, or the last
   * fallback failing, refunds the call and throws.
   */
  async function withFallbacks<T>(first: Prepared, attempt: (p: Prepared) => Promise<T>): Promise<{ p: Prepared; value: T }> {
    let p = first;
    try {
      return { p, value: await attempt(p) };
    } catch (err) {
      if (!providerDown(err) || !deps.fallbacks) throw await fail(p, err);
      let lastError: unknown = err;
      for (const fallbackId of await deps.fallbacks.idsOf(first.model.id)) {
        const next = await switchTo(p, fallbackId, err);
        if (!next) continue;
        p = next;
        try {
          return { p, value: await attempt(p) };
        } catch (fallbackError) {
          lastError = fallbackError;
          if (!providerDown(fallbackError)) break;
        }
      }
      throw await fail(p, lastError);
    }
  }

  /** Temperature goes upstream only to models that honour it (reasoning models advertise no temperature control). */
  const upstreamRequest = (p: Prepared) => ({
    model: p.model.upstreamModel,
    messages: p.messages,
    maxTokens: p.maxTokens,
    temperature: p.model.capabilities.controls?.temperature ? p.call.temperature : undefined,
  });

  const baseMetadata = (p: Prepared, extra: Record<string, unknown>) => ({
    modelSlug: p.model.slug,
    reservedTokens: p.reservedTokens,
    maxTokens: p.maxTokens,
    ...(p.trimmedMessages > 0 ? { trimmedMessages: p.trimmedMessages } : {}),
    ...(p.principal.apiKeyId ? { apiKeyId: p.principal.apiKeyId } : {}),
    ...(p.fallbackFrom ? { fallbackFrom: p.fallbackFrom.model, fallbackReason: upstreamToAppError(p.fallbackFrom.error, p.fallbackFrom.model).message } : {}),
    ...extra,
  });

  /**
   * Bills the real usage: settle, usage record and history item in one transaction, so the charge happens
   * exactly once with its records. A usage the provider did not report is counted from the delivered text.
   */
  async function finalize(
    p: Prepared,
    outcome: {
      text: string;
      usage: TokenUsage | null;
      finishReason: string;
      accountId: string | null;
      status: 'SUCCESS' | 'PARTIAL';
      extra?: Record<string, unknown>;
    },
  ): Promise<TextAnswer> {
    const measured = outcome.usage ?? { inputTokens: p.inputTokens, outputTokens: countTextTokens(outcome.text) };
    let price: { tokens: number; providerCostCents: number; providerCostMicros: number; currency: string };
    try {
      price = await catalog.priceUsage(p.model, measured);
    } catch (err) {
      // The model lost its price mid-call: charge what was reserved rather than nothing.
      logger.error({ err, model: p.model.slug, requestId: p.requestId }, 'pricing the usage failed; charging the reservation');
      price = { tokens: p.reservedTokens, providerCostCents: 0, providerCostMicros: 0, currency: 'USD' };
    }
    const answerOf = (chargedTokens: number): TextAnswer => ({
      text: outcome.text,
      usage: { inputTokens: measured.inputTokens, outputTokens: measured.outputTokens, creditsConsumed: chargedTokens },
      model: p.model.slug,
      requestId: p.requestId,
      finishReason: outcome.finishReason,
    });
    // One statement charges the answer with its records, so there is no moment when a delivered answer is known only
    // to this process (a crash before it leaves the reservation open and refunded, as for a call never answered).
    const { chargedTokens } = await metering.settleNow(p.metered, {
      status: outcome.status,
      chargeTokens: price.tokens,
      providerCostCents: price.providerCostCents,
      inputUnits: measured.inputTokens,
      outputUnits: measured.outputTokens,
      accountId: outcome.accountId,
      metadata: baseMetadata(p, {
        usageSource: outcome.usage ? 'provider' : 'counted',
        finishReason: outcome.finishReason,
        providerCostMicros: price.providerCostMicros,
        currency: price.currency,
        ...outcome.extra,
      }),
      generation: p.call.saveToHistory && outcome.status === 'SUCCESS' ? { kind: 'TEXT', prompt: lastUserText(p.call.messages), output: { text: outcome.text } } : null,
      response: outcome.status === 'SUCCESS' && p.call.answerBody ? (settled) => p.call.answerBody!(answerOf(settled.chargedTokens)) : undefined,
    });
    if (outcome.accountId) pool.recordSpend(outcome.accountId, price.providerCostMicros);
    return answerOf(chargedTokens);
  }

  /** A call that produced nothing billable: full refund and a FAILED (or TIMEOUT) usage record. */
  async function fail(p: Prepared, err: unknown): Promise<unknown> {
    // Upstream outcomes become the spec's answers; anything else is our own failure (500, details logged only).
    const known = err instanceof UpstreamError || err instanceof AppError;
    const appError = known ? upstreamToAppError(err, p.model.slug) : new AppError(500, 'INTERNAL', 'The generation failed on our side.');
    try {
      await db.transaction((tx) => metering.refund(tx, p.metered, appError, baseMetadata(p, {})));
    } catch (releaseError) {
      // The sweeper refunds an open reservation later; the caller still gets the real error.
      logger.error({ err: releaseError, requestId: p.requestId }, 'releasing a failed reservation failed');
    }
    return known ? appError : err;
  }

  return {
    /** A whole answer at once. */
    async generate(principal: Principal, call: TextCall, requestId: string): Promise<TextAnswer> {
      const { p, value: result } = await withFallbacks(await prepare(principal, call, requestId), (p) =>
        pool.run(p.model.providerSlug, (adapter, credential) => adapter.generateText(credential, upstreamRequest(p))),
      );
      return finalize(p, { accountId: result.accountId, status: 'SUCCESS', ...result.value });
    },

    /**
     * A streamed answer. Checks and the upstream connection happen before any byte is sent, so those failures are
     * ordinary JSON errors. Once streaming, a client that leaves does not stop the metering: the upstream answer is
     * read to its end and settled once. An upstream that breaks midway ends the stream with an `error` event and
     * is billed for the text delivered so far (counted with the tokenizer, never from error text).
     */
    async stream(principal: Principal, call: TextCall, requestId: string, open: () => SseStream): Promise<{ answer: TextAnswer | null; sse: SseStream }> {
      // A fallback may answer only until the stream opens: once a byte is sent, the call stays with its model.
      const { p, value: opened } = await withFallbacks(await prepare(principal, call, requestId), (p) => {
        const streamingSupported = p.model.capabilities.flags?.streaming !== false;
        return pool.run(p.model.providerSlug, async (adapter, credential) =>
          streamingSupported ? adapter.streamText(credential, upstreamRequest(p)) : asStream(await adapter.generateText(credential, upstreamRequest(p))),
        );
      });

      const sse = open();
      try {
        return { answer: await pump(p, opened, sse), sse };
      } catch (err) {
        // Billing failed after the stream started: the reservation stays open and the sweeper settles it on the
        // progress recorded so far. The client is told the answer did not complete.
        logger.error({ err, requestId }, 'finishing a stream failed');
        await sse.send({ type: 'error', error: { code: 'INTERNAL', message: 'Something went wrong on our side while finishing the answer. Retry; you will not be charged twice for this one.' } });
        sse.end();
        return { answer: null, sse };
      }
    },
  };

  async function pump(p: Prepared, opened: { value: TextStream; accountId: string }, sse: SseStream): Promise<TextAnswer | null> {
    const requestId = p.requestId;
    let clientGone = false;
    sse.onClientGone(() => {
      clientGone = true;
      logger.info({ requestId }, 'client left mid-stream; reading the answer to its end for billing');
    });
    let text = '';
    let reported: TokenUsage | null = null;
    let finishReason = 'stop';
    let failure: unknown = null;
    let lastProgress = 0;
    let pieces = 0;
    let progress: Promise<void> = Promise.resolve();
    try {
      for await (const event of opened.value) {
        if (event.type === 'text') {
          text += event.delta;
          pieces++;
          if (!clientGone) await sse.send(event);
          // Record progress on the reservation, so a crash mid-stream is settled on what was produced.
          if (pieces === 1 || performance.now() - lastProgress > 2000) {
            lastProgress = performance.now();
            const sofar = text;
            progress = progress.then(() => reportProgress(p, sofar));
          }
        } else if (event.type === 'usage') reported = event.usage;
        else finishReason = event.finishReason;
      }
    } catch (err) {
      failure = err;
    }

    await progress;
    if (failure) {
      if (failure instanceof UpstreamError && failure.accountFailure) await pool.markFailure(p.model.providerSlug, opened.accountId, failure).catch(() => undefined);
      logger.warn({ requestId, err: failure }, 'upstream stream broke midway');
      if (text.length === 0) {
        await fail(p, failure);
      } else {
        await finalize(p, { text, usage: null, finishReason: 'error', accountId: opened.accountId, status: 'PARTIAL', extra: { error: streamErrorEvent(failure).error, clientDisconnected: clientGone } });
      }
      await sse.send(streamErrorEvent(failure));
      sse.end();
      return null;
    }

    const answer = await finalize(p, { text, usage: reported, finishReason, accountId: opened.accountId, status: 'SUCCESS', extra: clientGone ? { clientDisconnected: true } : {} });
    await sse.send({ type: 'usage', usage: { inputTokens: answer.usage.inputTokens, outputTokens: answer.usage.outputTokens } });
    await sse.send({ type: 'finish', finishReason });
    sse.end();
    return answer;
  }

  async function reportProgress(p: Prepared, text: string): Promise<void> {
    try {
      const sofar = await catalog.priceUsage(p.model, { inputTokens: p.inputTokens, outputTokens: countTextTokens(text) });
      await wallet.markInFlight({ requestId: p.requestId, usedTokens: Math.min(sofar.tokens, p.reservedTokens) });
    } catch (err) {
      logger.warn({ err, requestId: p.requestId }, 'recording stream progress failed');
    }
  }
}

/** A whole answer as a stream, for models that cannot stream. */
function asStream(result: TextResult): TextStream {
  async function* events() {
    if (result.text) yield { type: 'text' as const, delta: result.text };
    if (result.usage) yield { type: 'usage' as const, usage: result.usage };
    yield { type: 'finish' as const, finishReason: result.finishReason };
  }
  const iterator = events();
  return { [Symbol.asyncIterator]: () => iterator, abort: () => undefined };
}

export type TextGateway = ReturnType<typeof createTextGateway>;
