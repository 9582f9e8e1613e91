import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/database.js';

/** How often one statement looks for work in every queue at once. */
export const QUEUE_WATCH_INTERVAL_MS = 500;
/** How often each worker still polls its own queue, should the watch ever stop calling. */
export const WORKER_FALLBACK_POLL_SECONDS = 30;

/**
 * One statement every half second for all queues, instead of each worker polling its own: with ~30 workers that
 * was ~60 statements a second on an idle instance, and on the embedded database ~4 MB/s of garbage that kept V8 from
 * ever shrinking its young generation. `onWaiting` gets the queues holding a job ready to run now.
 */
export function watchQueues(options: { database: Database; logger: FastifyBaseLogger; onWaiting: (queues: string[]) => void; intervalMs?: number }): {
  stop(): Promise<void>;
} {
  const { database, logger, onWaiting, intervalMs = QUEUE_WATCH_INTERVAL_MS } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> = Promise.resolve();

  const look = async () => {
    try {
      const { rows } = await database.query<{ name: string }>(`select distinct name from pgboss.job where state < 'active' and start_after <= now()`);
      if (!stopped && rows.length > 0) onWaiting(rows.map((row) => row.name));
    } catch (err) {
      logger.warn({ err }, 'looking for waiting jobs failed; the workers poll on their own until it answers again');
    }
  };
  const tick = () => {
    inFlight = look().finally(() => {
      if (!stopped) timer = setTimeout(tick, intervalMs);
    });
  };
  tick();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
}
