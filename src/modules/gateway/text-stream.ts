import type { SseStream } from '../../platform/http/sse.js';
import { streamErrorEvent } from './errors.js';
import { UpstreamError, type TextResult, type TextStream, type TextStreamEvent, type TokenUsage, type ToolCall } from './providers/types.js';
import { fail, finalize } from './text-billing.js';
import type { Prepared, TextAnswer, TextGatewayDeps } from './text-types.js';
import { countAnswerTokens } from './tokens.js';

/**
 * Sends the upstream stream to the client and bills it once it ends. A client that leaves does not stop the
 * metering: the answer is read to its end. A stream that breaks midway is billed for the text delivered so far (or
 * refunded when there is none) and ends with an `error` event; null then.
 */
export async function pump(deps: TextGatewayDeps, p: Prepared, opened: { value: TextStream; accountId: string }, sse: SseStream): Promise<TextAnswer | null> {
  const { logger, pool } = deps;
  const requestId = p.requestId;
  let clientGone = false;
  sse.onClientGone(() => {
    clientGone = true;
    logger.info({ requestId }, 'client left mid-stream; reading the answer to its end for billing');
  });
  let text = '';
  const toolCalls: ToolCall[] = [];
  let reported: TokenUsage | null = null;
  let finishReason = 'stop';
  let failure: unknown = null;
  let lastProgress = 0;
  let pieces = 0;
  let progress: Promise<void> = Promise.resolve();
  try {
    for await (const event of opened.value) {
      if (event.type === 'text' || event.type === 'tool_call') {
        if (event.type === 'text') text += event.delta;
        else addToolCallPiece(toolCalls, event);
        pieces++;
        if (!clientGone) await sse.send(event);
        // Record progress on the reservation, so a crash mid-stream is settled on what was produced.
        if (pieces === 1 || performance.now() - lastProgress > 2000) {
          lastProgress = performance.now();
          const sofar = countAnswerTokens(text, toolCalls);
          progress = progress.then(() => reportProgress(deps, p, sofar));
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
    if (text.length === 0 && toolCalls.length === 0) {
      await fail(deps, p, failure);
    } else {
      await finalize(deps, p, { text, toolCalls: completeCalls(toolCalls), usage: null, finishReason: 'error', accountId: opened.accountId, status: 'PARTIAL', delivered: true, extra: { error: streamErrorEvent(failure).error, clientDisconnected: clientGone } });
    }
    await sse.send(streamErrorEvent(failure));
    sse.end();
    return null;
  }

  const answer = await finalize(deps, p, { text, toolCalls: completeCalls(toolCalls), usage: reported, finishReason, accountId: opened.accountId, status: 'SUCCESS', delivered: true, extra: clientGone ? { clientDisconnected: true } : {} });
  await sse.send({ type: 'usage', usage: { inputTokens: answer.usage.inputTokens, outputTokens: answer.usage.outputTokens } });
  await sse.send({ type: 'finish', finishReason });
  sse.end();
  return answer;
}

/** A streamed tool call grows piece by piece: its id and name come first, then its arguments' text. */
function addToolCallPiece(calls: ToolCall[], event: Extract<TextStreamEvent, { type: 'tool_call' }>): void {
  const call = (calls[event.index] ??= { id: '', name: '', arguments: '' });
  if (event.id) call.id = event.id;
  if (event.name) call.name = event.name;
  call.arguments += event.argumentsDelta;
}

/** The calls in index order, without holes (an index the provider skipped). */
const completeCalls = (calls: ToolCall[]): ToolCall[] => calls.filter((c): c is ToolCall => c !== undefined);

async function reportProgress(deps: TextGatewayDeps, p: Prepared, outputTokens: number): Promise<void> {
  try {
    const sofar = await deps.catalog.priceUsage(p.model, { inputTokens: p.inputTokens, outputTokens });
    await deps.wallet.markInFlight({ requestId: p.requestId, usedTokens: Math.min(sofar.tokens, p.reservedTokens) });
  } catch (err) {
    deps.logger.warn({ err, requestId: p.requestId }, 'recording stream progress failed');
  }
}

/** A whole answer as a stream, for models that cannot stream. */
export function asStream(result: TextResult): TextStream {
  async function* events() {
    if (result.text) yield { type: 'text' as const, delta: result.text };
    for (const [index, call] of (result.toolCalls ?? []).entries()) yield { type: 'tool_call' as const, index, id: call.id, name: call.name, argumentsDelta: call.arguments };
    if (result.usage) yield { type: 'usage' as const, usage: result.usage };
    yield { type: 'finish' as const, finishReason: result.finishReason };
  }
  const iterator = events();
  return { [Symbol.asyncIterator]: () => iterator, abort: () => undefined };
}
