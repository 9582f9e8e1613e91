import { UpstreamError, type TextStream, type TextStreamEvent } from './types.js';

export interface GuardOptions {
  /** Longest silence allowed between two events before the stream counts as stalled. */
  idleTimeoutMs: number;
  /** Cancels the underlying HTTP call. */
  abort: () => void;
  /** Turns whatever the SDK threw into an UpstreamError. */
  mapError: (err: unknown) => UpstreamError;
}

/**
 * Wraps an adapter's raw event stream so that every way it can end is explicit: a stall becomes a `timeout`
 * error, our own cancel an `aborted` error, and an upstream that closes without a finish reason a `server` error,
 * so the gateway never mistakes a broken stream for a complete answer.
 */
export function guardStream(source: AsyncIterable<TextStreamEvent>, options: GuardOptions): TextStream {
  let cancelled = false;
  let stalled = false;
  let timer: NodeJS.Timeout | null = null;
  const arm = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      options.abort();
    }, options.idleTimeoutMs);
    timer.unref?.();
  };
  const disarm = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };

  async function* events(): AsyncGenerator<TextStreamEvent> {
    let finished = false;
    arm();
    try {
      for await (const event of source) {
        arm();
        if (event.type === 'finish') finished = true;
        yield event;
      }
    } catch (err) {
      if (stalled) throw new UpstreamError('timeout', `The provider sent nothing for ${Math.round(options.idleTimeoutMs / 1000)} s.`);
      if (cancelled) throw new UpstreamError('aborted', 'The stream was cancelled.');
      throw err instanceof UpstreamError ? err : options.mapError(err);
    } finally {
      disarm();
    }
    if (stalled) throw new UpstreamError('timeout', `The provider sent nothing for ${Math.round(options.idleTimeoutMs / 1000)} s.`);
    if (cancelled) throw new UpstreamError('aborted', 'The stream was cancelled.');
    if (!finished) throw new UpstreamError('server', 'The provider closed the stream before the answer was complete.', null, 'incomplete_stream');
  }

  const iterator = events();
  return {
    [Symbol.asyncIterator]: () => iterator,
    abort() {
      cancelled = true;
      disarm();
      options.abort();
    },
  };
}
