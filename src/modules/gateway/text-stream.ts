import type { SseStream } from '../../platform/http/sse.js';
import { streamErrorEvent } from './errors.js';
import { UpstreamError, type TextResult, type TextStream, type TokenUsage } from './providers/types.js';
import { fail, finalize } from './text-billing.js';
import type { Prepared, TextAnswer, TextGatewayDeps } from './text-types.js';
import { countTextTokens } from './tokens.js';

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
    if (text.length === 0) {
      await fail(deps, p, failure);
    } else {
      await finalize(deps, p, { text, usage: null, finishReason: 'error', accountId: opened.accountId, status: 'PARTIAL', extra: { error: streamErrorEvent(failure).error, clientDisconnected: clientGone } });
    }
    await sse.send(streamErrorEvent(failure));
    sse.end();
    return null;
  }

  const answer = await finalize(deps, p, { text, usage: reported, finishReason, accountId: opened.accountId, status: 'SUCCESS', extra: clientGone ? { clientDisconnected: true } : {} });
  await sse.send({ type: 'usage', usage: { inputTokens: answer.usage.inputTokens, outputTokens: answer.usage.outputTokens } });
  await sse.send({ type: 'finish', finishReason });
  sse.end();
  return answer;
}

async function reportProgress(deps: TextGatewayDeps, p: Prepared, text: string): Promise<void> {
  try {
    const sofar = await deps.catalog.priceUsage(p.model, { inputTokens: p.inputTokens, outputTokens: countTextTokens(text) });
    await deps.wallet.markInFlight({ requestId: p.requestId, usedTokens: Math.min(sofar.tokens, p.reservedTokens) });
  } catch (err) {
    deps.logger.warn({ err, requestId: p.requestId }, 'recording stream progress failed');
  }
}

/** A whole answer as a stream, for models that cannot stream. */
export function asStream(result: TextResult): TextStream {
  async function* events() {
    if (result.text) yield { type: 'text' as const, delta: result.text };
    if (result.usage) yield { type: 'usage' as const, usage: result.usage };
    yield { type: 'finish' as const, finishReason: result.finishReason };
  }
  const iterator = events();
  return { [Symbol.asyncIterator]: () => iterator, abort: () => undefined };
}
