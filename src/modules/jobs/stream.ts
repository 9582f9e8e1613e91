import type { SseStream } from '../../platform/http/sse.js';
import type { JobsService, JobView } from './service.js';

/** A re-read now and then, in case a notification was lost (a dropped LISTEN connection). */
const RESYNC_MS = 10_000;

const FINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);

/**
 * Streams one job: its current state at once, then each change (announced over LISTEN/NOTIFY by whichever instance
 * runs the job), ending after the final state. A client that leaves stops the stream; the job runs on regardless.
 */
export async function streamJob(jobs: JobsService, userId: string, jobId: string, open: () => SseStream): Promise<void> {
  let wake: (() => void) | null = null;
  let dirty = true;
  const unwatch = await jobs.watch(jobId, () => {
    dirty = true;
    wake?.();
  });
  const sse = open();
  sse.onClientGone(() => wake?.());
  let last = '';
  try {
    while (!sse.closed) {
      if (dirty) {
        dirty = false;
        const job: JobView = await jobs.getOwn(userId, jobId);
        const key = `${job.status}|${job.progress}|${job.updatedAt}`;
        if (key !== last) {
          last = key;
          await sse.send({ type: 'job', job });
        }
        if (FINAL.has(job.status)) break;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          dirty = true;
          resolve();
        }, RESYNC_MS);
        timer.unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        if (dirty || sse.closed) wake();
      });
      wake = null;
    }
  } finally {
    unwatch();
    sse.end();
  }
}
