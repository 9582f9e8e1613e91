import { defineJob, type AnyJobDefinition } from '../../../platform/jobs/jobs.js';
import type { JobRow } from '../../jobs/service.js';
import { createAudioGateway } from './audio.js';
import { createEnhanceImage } from './enhance-image.js';
import { createImageGateway, MEDIA_RUN_QUEUE } from './image.js';
import { createJobCanceller } from './job-cancel.js';
import { asAppError, failJob, type MediaGatewayDeps } from './common.js';
import { createVideoGateway } from './video.js';
import { MEDIA_POLL_QUEUE } from './video-job.js';

declare module '../../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'media.job-run': { jobId: string };
    'media.job-poll': { jobId: string };
  }
}

/**
 * The media half of the gateway: images (sync, or as a job), video jobs (generate, lip-sync, extend), audio and image
 * enhancement. Jobs run on pg-boss (a run queue, then a poll queue re-enqueued with a delay for asynchronous
 * providers), so they survive restarts and settle whether or not anyone watches them.
 */
export function createMediaGateway(deps: MediaGatewayDeps) {
  const { jobs, logger } = deps;
  const image = createImageGateway(deps);
  const video = createVideoGateway(deps);
  const audio = createAudioGateway(deps);
  const enhance = createEnhanceImage(deps, image);

  jobs.setCanceller(createJobCanceller(deps));
  // A step cut by a dead process runs again: a video the provider already took is polled, anything else runs anew.
  jobs.onResume(async (job, tx) => {
    await deps.queue.send(job.externalId ? MEDIA_POLL_QUEUE : MEDIA_RUN_QUEUE, { jobId: job.id }, { tx });
  });

  /**
   * Loads the job and hands it on while it is open, holding its step lease meanwhile; an unexpected error fails the
   * job (refunded) after the last retry.
   */
  async function handle(jobId: string, retryCount: number, work: (job: JobRow) => Promise<void>): Promise<void> {
    const job = await jobs.get(jobId);
    if (!job || ['SUCCEEDED', 'FAILED', 'CANCELED'].includes(job.status)) return;
    await jobs.hold(jobId);
    try {
      await work(job);
    } catch (err) {
      logger.error({ err, jobId, retryCount }, 'a media job step failed');
      if (retryCount >= JOB_RETRIES) await failJob(deps, jobId, asAppError(err, job.modelSlug));
      throw err;
    } finally {
      await jobs.release(jobId);
    }
  }

  return {
    image,
    video,
    audio,
    enhance,

    /** Runs one step by hand (tests, operators): the same code the workers run. */
    runJob: (jobId: string) => handle(jobId, 0, (job) => (job.kind === 'IMAGE' ? image.runJob(job) : video.runJob(job))),
    pollJob: (jobId: string) => handle(jobId, 0, (job) => video.pollJob(job)),

    jobs(): AnyJobDefinition[] {
      return [
        defineJob({
          name: MEDIA_RUN_QUEUE,
          options: { retryLimit: JOB_RETRIES, retryDelaySeconds: 5, concurrency: 2, expireInSeconds: 15 * 60 },
          handler: ({ jobId }, meta) => handle(jobId, meta.retryCount, (job) => (job.kind === 'IMAGE' ? image.runJob(job) : video.runJob(job))),
        }),
        defineJob({
          name: MEDIA_POLL_QUEUE,
          options: { retryLimit: JOB_RETRIES, retryDelaySeconds: 5, concurrency: 2, expireInSeconds: 10 * 60 },
          handler: ({ jobId }, meta) => handle(jobId, meta.retryCount, (job) => video.pollJob(job)),
        }),
      ];
    },
  };
}

const JOB_RETRIES = 3;

export type MediaGateway = ReturnType<typeof createMediaGateway>;
