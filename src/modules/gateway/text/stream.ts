import type { Principal } from '../../../platform/auth/plugin.js';
import type { SseStream } from '../../../platform/http/sse.js';
import { runWithIdempotencyKey, unkeyedRequest, type MeteredRequest } from '../metering/idempotency.js';
import type { TextResult, TextStream } from '../providers/types.js';
import type { PoolOutcome } from '../routing/pool.js';
import { fallBack } from './fallbacks.js';
import { inCallSpan, prepare, upstreamRequest } from './prepare.js';
import { IGNORED_HEADER, TEXT_ROUTE, textCallOf } from './text.js';
import { pump } from './stream-pump.js';
import type { CallOptions, Prepared, TextAnswer, TextBody, TextCall, TextGatewayDeps } from './types.js';

/** Opens the answer's server-sent events, with these headers, once the upstream accepted the call. */
export type OpenSse = (headers?: Record<string, string>) => SseStream;

/**
 * `stream: true`: answers with server-sent events through `open` (called once the upstream accepted the call). Errors
 * before that are thrown and answered as JSON; a replay of its Idempotency-Key streams the stored answer again.
 * Resolves with the answer as billed (the stored one for a replay), or null when the stream broke midway.
 */
export async function streamText(
  deps: TextGatewayDeps,
  principal: Principal,
  body: TextBody,
  options: CallOptions & { open: OpenSse },
): Promise<TextAnswer | null> {
  // The request id travels as a header: the stream's events carry none.
  const run = (request: MeteredRequest) =>
    stream(deps, principal, textCallOf(body, options.timing), request, (headers) =>
      options.open(Object.assign({}, headers, { 'x-ai-request-id': request.requestId })),
    );
  if (!options.idempotencyKey) return run(unkeyedRequest());
  // A stream that broke midway is not a complete answer: the key is freed for a retry unless it was charged.
  const keyed = await runWithIdempotencyKey(
    deps.idempotency,
    { userId: principal.userId, key: options.idempotencyKey, route: TEXT_ROUTE, body },
    run,
    (answer) => answer,
  );
  return keyed.replayed ? replay(keyed.response, options.open) : keyed.result;
}

/**
 * A streamed answer. Checks and the upstream connection happen before any byte is sent, so those failures are
 * ordinary JSON errors. Once streaming, a client that leaves does not stop the metering: the upstream answer is
 * read to its end and settled once (`pump`).
 */
async function stream(deps: TextGatewayDeps, principal: Principal, call: TextCall, request: MeteredRequest, open: OpenSse): Promise<TextAnswer | null> {
  const first = await prepare(deps, principal, call, request);
  // Timed to the upstream's first answer (its headers); pump times the whole stream as `upstream`.
  const attempt = (p: Prepared) => {
    const streamingSupported = p.model.capabilities.flags?.streaming !== false;
    return inCallSpan(p, 'upstream-ttfb', () =>
      deps.pool.run(p.model.providerSlug, async (adapter, credential) =>
        streamingSupported ? adapter.streamText(credential, upstreamRequest(p)) : asStream(await adapter.generateText(credential, upstreamRequest(p))),
      ),
    );
  };
  // A fallback may answer only until the stream opens: once a byte is sent, the call stays with its model.
  let served: { p: Prepared; value: PoolOutcome<TextStream> };
  try {
    served = { p: first, value: await attempt(first) };
  } catch (err) {
    served = await fallBack(deps, first, err, attempt);
  }
  const { p, value: opened } = served;
  const sse = open(p.ignored?.length ? { [IGNORED_HEADER]: p.ignored.join(', ') } : {});
  try {
    return await pump(deps, p, opened, sse);
  } catch (err) {
    // Not the charge (pump answers its failures itself): the reservation stays open, its request's key or the
    // sweeper closes it on the progress recorded so far, which is all the client is told.
    deps.logger.error({ err, requestId: p.requestId }, 'finishing a stream failed');
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
    return null;
  }
}

/** A repeated Idempotency-Key: the stored answer streamed again, uncharged. */
async function replay(stored: TextAnswer, open: OpenSse): Promise<TextAnswer> {
  const sse = open({ 'idempotent-replayed': 'true', 'x-ai-request-id': stored.requestId });
  // The thinking first and whole (with its signatures), as a client must send it back on a tool follow-up.
  for (const [index, block] of (stored.thinking ?? []).entries()) {
    if (block.type === 'redacted_thinking') await sse.send({ type: 'thinking', index, redactedData: block.data });
    else {
      await sse.send({ type: 'thinking', index, delta: block.thinking });
      await sse.send({ type: 'thinking', index, signature: block.signature });
    }
  }
  if (stored.text) await sse.send({ type: 'text', delta: stored.text });
  if (stored.refusal) await sse.send({ type: 'refusal', delta: stored.refusal });
  for (const [index, call] of (stored.toolCalls ?? []).entries())
    await sse.send({ type: 'tool_call', index, id: call.id, name: call.name, argumentsDelta: call.arguments });
  await sse.send({ type: 'usage', usage: { inputTokens: stored.usage.inputTokens, outputTokens: stored.usage.outputTokens } });
  await sse.send({ type: 'finish', finishReason: stored.finishReason ?? 'stop' });
  sse.end();
  return stored;
}

/** A whole answer as a stream, for models that cannot stream. */
export function asStream(result: TextResult): TextStream {
  async function* events() {
    for (const [index, block] of (result.thinking ?? []).entries()) {
      yield block.type === 'thinking'
        ? { type: 'thinking' as const, index, delta: block.thinking, signature: block.signature }
        : { type: 'thinking' as const, index, redactedData: block.data };
    }
    if (result.text) yield { type: 'text' as const, delta: result.text };
    if (result.refusal) yield { type: 'refusal' as const, delta: result.refusal };
    for (const [index, call] of (result.toolCalls ?? []).entries())
      yield { type: 'tool_call' as const, index, id: call.id, name: call.name, argumentsDelta: call.arguments };
    if (result.usage) yield { type: 'usage' as const, usage: result.usage };
    yield { type: 'finish' as const, finishReason: result.finishReason };
  }
  const iterator = events();
  return { [Symbol.asyncIterator]: () => iterator, abort: () => undefined };
}
