import type { SseStream } from '../../../platform/http/sse.js';
import { UpstreamError, type TextStream, type TextStreamEvent, type ThinkingBlock, type TokenUsage, type ToolCall } from '../providers/types.js';
import { chargePendingEvent, streamErrorEvent } from '../routing/upstream-errors.js';
import { fail } from './fallbacks.js';
import { asIs, finalize } from './text.js';
import { countAnswerTokens } from './tokens.js';
import type { Prepared, TextAnswer, TextGatewayDeps } from './types.js';

/**
 * Sends the upstream stream to the client and bills it once it ends. A client that leaves does not stop the
 * metering: the answer is read to its end. A stream that breaks midway is billed for the text delivered so far (or
 * refunded when there is none) and ends with an `error` event saying what was charged; null then. When the charge
 * cannot be written (the database is away), the `error` event says the most the reservation will be charged when it
 * is closed without this process: the progress last recorded on it.
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
  let refusal = '';
  const toolCalls: ToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  let reported: TokenUsage | null = null;
  let finishReason = 'stop';
  let failure: unknown = null;
  let lastProgress = 0;
  let progress: Promise<void> = Promise.resolve();
  /** The most usage recorded on the reservation (or sent to be): what closing it without this process charges at most. */
  let marked = 0;
  const streaming = performance.now();
  try {
    for await (const event of opened.value) {
      if (event.type === 'text' || event.type === 'tool_call' || event.type === 'refusal') {
        if (event.type === 'text') text += event.delta;
        else if (event.type === 'refusal') refusal += event.delta;
        else addToolCallPiece(toolCalls, event);
        if (!clientGone) await sse.send(event);
        // Record progress on the reservation, so a crash mid-stream is settled on what was produced (once something
        // was: a stream that delivered nothing is refunded, whoever closes it).
        const produced = text.length > 0 || refusal.length > 0 || toolCalls.length > 0;
        if (produced && (lastProgress === 0 || performance.now() - lastProgress > 2000)) {
          lastProgress = performance.now();
          const sofar = countAnswerTokens(text + refusal, toolCalls);
          progress = progress.then(() => reportProgress(deps, p, sofar, (tokens) => (marked = Math.max(marked, tokens))));
        }
      } else if (event.type === 'thinking') {
        addThinkingPiece(thinking, event);
        if (!clientGone) await sse.send(event);
      } else if (event.type === 'usage') reported = event.usage;
      else finishReason = event.finishReason;
    }
  } catch (err) {
    failure = err;
  }

  p.call.timing?.add('upstream', p.call.timing.get('upstream-ttfb') + performance.now() - streaming);
  await progress;
  if (failure) {
    if (failure instanceof UpstreamError && failure.accountFailure)
      await pool.markFailure(p.model.providerSlug, opened.accountId, failure).catch(() => undefined);
    logger.warn({ requestId, err: failure }, 'upstream stream broke midway');
    let chargedTokens = 0;
    try {
      if (text.length === 0 && refusal.length === 0 && toolCalls.length === 0) await fail(deps, p, failure);
      else {
        const partial = await finalize(
          deps,
          p,
          {
            text,
            refusal,
            toolCalls: completeCalls(toolCalls),
            usage: null,
            finishReason: 'error',
            accountId: opened.accountId,
            status: 'PARTIAL',
            delivered: true,
            extra: { error: streamErrorEvent(failure).error, clientDisconnected: clientGone },
          },
          asIs,
        );
        chargedTokens = partial.chargedTokens;
      }
    } catch (err) {
      return endUncharged(deps, p, sse, err, marked);
    }
    await sse.send(streamErrorEvent(failure, chargedTokens));
    sse.end();
    return null;
  }

  let answer: TextAnswer;
  try {
    const settled = await finalize(
      deps,
      p,
      {
        text,
        refusal,
        toolCalls: completeCalls(toolCalls),
        thinking: thinking.filter(Boolean),
        usage: reported,
        finishReason,
        accountId: opened.accountId,
        status: 'SUCCESS',
        delivered: true,
        extra: clientGone ? { clientDisconnected: true } : {},
      },
      asIs,
    );
    answer = settled.answer!;
  } catch (err) {
    return endUncharged(deps, p, sse, err, marked);
  }
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

/** A streamed thinking block grows the same way: its text, then its signature (or a redacted block's data at once). */
function addThinkingPiece(blocks: ThinkingBlock[], event: Extract<TextStreamEvent, { type: 'thinking' }>): void {
  if (event.redactedData !== undefined) {
    blocks[event.index] = { type: 'redacted_thinking', data: event.redactedData };
    return;
  }
  const block = (blocks[event.index] ??= { type: 'thinking', thinking: '', signature: '' });
  if (block.type !== 'thinking') return;
  if (event.delta) block.thinking += event.delta;
  if (event.signature) block.signature += event.signature;
}

/** The calls in index order, without holes (an index the provider skipped). */
const completeCalls = (calls: ToolCall[]): ToolCall[] => calls.filter((c): c is ToolCall => c !== undefined);

/**
 * The charge could not be written (the settlement already tried again: metering.ts): the reservation is left open, and whoever
 * closes it (the key's `giveUp`, a retry, the sweeper) charges the usage last recorded on it, at most `marked`.
 */
async function endUncharged(deps: TextGatewayDeps, p: Prepared, sse: SseStream, err: unknown, marked: number): Promise<null> {
  deps.logger.error(
    { err, requestId: p.requestId, chargeAtMostTokens: marked },
    'charging a stream failed; its reservation is closed on its recorded progress',
  );
  await sse.send(chargePendingEvent(marked));
  sse.end();
  return null;
}

async function reportProgress(deps: TextGatewayDeps, p: Prepared, outputTokens: number, sending: (tokens: number) => void): Promise<void> {
  try {
    const sofar = await deps.catalog.priceUsage(p.model, { inputTokens: p.inputTokens, outputTokens });
    const usedTokens = Math.min(sofar.tokens, p.reservedTokens);
    sending(usedTokens);
    await deps.wallet.markInFlight({ requestId: p.requestId, usedTokens });
  } catch (err) {
    deps.logger.warn({ err, requestId: p.requestId }, 'recording stream progress failed');
  }
}
