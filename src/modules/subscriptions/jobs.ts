import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import type { SubscriptionBillingService } from './billing.js';

export const SUBSCRIPTION_LIFECYCLE_JOB = 'subscriptions.lifecycle';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'subscriptions.lifecycle': { limit?: number };
  }
}

/**
 * Every minute: scheduled switches, cycle ends (grace, renewal requests), trial ends, grace expiry and reminders.
 * pg-boss runs one scheduled job per minute across instances; a retry or an overlap is harmless (see lifecycle.ts).
 */
export function subscriptionJobs(billing: Pick<SubscriptionBillingService, 'runDue'>): JobDefinition[] {
  return [
    defineJob({
      name: SUBSCRIPTION_LIFECYCLE_JOB,
      options: { cron: '* * * * *', retryLimit: 2, retryDelaySeconds: 30, expireInSeconds: 600 },
      handler: async (payload) => {
        const limit = payload.limit ?? 200;
        // Drain a backlog (after downtime) in batches within one run.
        for (let round = 0; round < 20; round++) {
          const counts = await billing.runDue(limit);
          if (Object.values(counts).every((n) => n < limit)) break;
        }
      },
    }) as JobDefinition,
  ];
}
