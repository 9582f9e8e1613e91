import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { FINAL_JOB_STATUSES, jobs } from '../../db/schema/jobs.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { WalletService } from '../wallet/service.js';

type JobRow = typeof jobs.$inferSelect;

/** What a cancelled job was charged, and the message it ends with. */
export interface CancelSettlement {
  tokensConsumed: number;
  message: string;
}

/**
 * How a cancellation is paid for, decided by whoever runs the job (the media gateway registers it):
 * - `stop` asks the provider to stop a job it was handed (`externalId` set), outside any transaction: true only when
 *   the provider confirmed the task stopped before it was billed;
 * - `settle` refunds or charges the job's reservation inside the cancel's transaction, on the job locked and still
 *   open. It may throw (a 409 while the job is being handed to the provider), which leaves the job as it was.
 */
export interface JobCanceller {
  stop(job: JobRow): Promise<boolean>;
  settle(tx: Tx, job: JobRow, stopped: boolean): Promise<CancelSettlement>;
}

export interface CancelDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  wallet: Pick<WalletService, 'release'>;
}

/** Without a registered canceller nothing reached a provider: the reservation is refunded in full. */
async function refundAll(deps: CancelDeps, tx: Tx, job: JobRow): Promise<CancelSettlement> {
  await deps.wallet.release({ requestId: job.requestId, reason: 'Refunded: the job was cancelled' }, tx);
  return { tokensConsumed: 0, message: 'You cancelled this job; the reserved credits were refunded.' };
}

/**
 * Cancels an open job: the provider is asked to stop it first, then the job row is locked, the money settled and the
 * job marked CANCELED in one transaction, so a job finishing at the same moment either settles or is cancelled, never
 * both. Returns the row and whether this call cancelled it (false: it had ended meanwhile).
 */
export async function cancelJob(deps: CancelDeps, canceller: JobCanceller | null, job: JobRow): Promise<{ row: JobRow; canceled: boolean }> {
  let stopped = false;
  if (job.externalId && canceller) {
    stopped = await canceller.stop(job).catch((err: unknown) => {
      deps.logger.warn({ err, jobId: job.id }, 'asking the provider to stop a cancelled job failed');
      return false;
    });
  }
  return deps.db.transaction(async (tx) => {
    const [row] = await tx.select().from(jobs).where(eq(jobs.id, job.id)).for('update');
    if (!row || FINAL_JOB_STATUSES.includes(row.status)) return { row: row ?? job, canceled: false };
    // A provider's confirmation counts for the task it was asked about only.
    const confirmed = stopped && row.externalId === job.externalId;
    const settled = canceller ? await canceller.settle(tx, row, confirmed) : await refundAll(deps, tx, row);
    const now = deps.clock.now();
    const [updated] = await tx
      .update(jobs)
      .set({
        status: 'CANCELED',
        errorCode: 'CANCELED',
        errorMessage: settled.message,
        tokensConsumed: settled.tokensConsumed,
        updatedAt: now,
        finishedAt: now,
      })
      .where(eq(jobs.id, job.id))
      .returning();
    return { row: updated!, canceled: true };
  });
}
