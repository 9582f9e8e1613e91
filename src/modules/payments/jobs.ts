import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import type { PaymentsService } from './service.js';

export const PAYMENTS_RECONCILE_JOB = 'payments.reconcile';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'payments.reconcile': { limit?: number };
  }
}

/**
 * Every minute (pg-boss runs one scheduled job per minute across instances): recorded messages applied, open
 * checkouts re-queried with their gateway, day-old checkouts expired, renewals charged. Overlaps are harmless.
 */
export function paymentJobs(payments: Pick<PaymentsService, 'reconcile'>): JobDefinition[] {
  return [
    defineJob({
      name: PAYMENTS_RECONCILE_JOB,
      options: { cron: '* * * * *', retryLimit: 2, retryDelaySeconds: 30, expireInSeconds: 600 },
      handler: async (payload) => {
        await payments.reconcile(payload.limit ?? 100);
      },
    }) as JobDefinition,
  ];
}
