import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import type { Feeds } from './feeds.js';

export const TRENDING_JOB = 'community.trending';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'community.trending': Record<string, never>;
  }
}

/** Every 15 minutes: recompute the trending scores into the next epoch (see Feeds.recomputeTrending). */
export function communityJobs(feeds: Pick<Feeds, 'recomputeTrending'>): JobDefinition[] {
  return [
    defineJob({
      name: TRENDING_JOB,
      options: { cron: '*/15 * * * *', retryLimit: 1, expireInSeconds: 600 },
      handler: async () => void (await feeds.recomputeTrending()),
    }) as JobDefinition,
  ];
}
