import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import type { WalletService } from './service.js';

export const SWEEP_RESERVATIONS_JOB = 'wallet.sweep-reservations';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'wallet.sweep-reservations': { limit?: number };
  }
}

/** Every minute: settle the reservations a crash left open (see WalletService.sweepExpired). */
export function walletJobs(wallet: WalletService): JobDefinition[] {
  return [
    defineJob({
      name: SWEEP_RESERVATIONS_JOB,
      options: { cron: '* * * * *', retryLimit: 1, expireInSeconds: 300 },
      handler: async (payload) => {
        const limit = payload.limit ?? 500;
        // Drain in batches so a large backlog clears in one run.
        for (let round = 0; round < 20; round++) {
          const { settled, released } = await wallet.sweepExpired(limit);
          if (settled + released < limit) break;
        }
      },
    }) as JobDefinition,
  ];
}
