import type { Tx } from '../../../platform/db/database.js';
import { conflict } from '../../../platform/http/errors.js';
import type { CancelSettlement, JobCanceller, JobRow } from '../../jobs/service.js';
import { settleDelivered, type MediaGatewayDeps } from './common.js';
import { priceOptionsOf, type VideoInput } from './video-common.js';
import { stopVideoUpstream } from './video-job.js';

type ImageInput = { count: number; providerId: string | null };

/**
 * Whether the provider was handed the job: a video once it has the provider's task id, an image job once it runs
 * (its images are made in that step). A video job claimed by its run step but without a task id yet may be reaching the
 * provider right now: it can be cancelled again in a moment, when the step has ended one way or the other.
 */
function handedOver(job: JobRow): boolean {
  if (job.kind === 'IMAGE') return job.status === 'RUNNING';
  if (job.externalId) return true;
  if (job.startedAt) throw conflict('This job is being handed to the provider right now; cancel it again in a few seconds.', { status: job.status });
  return false;
}

/** What the provider bills for the job, as the job's success would record it. */
async function providerCost(deps: MediaGatewayDeps, job: JobRow, model: { id: string; slug: string }): Promise<number> {
  const usage = job.kind === 'IMAGE' ? { images: (job.input as ImageInput).count } : { seconds: (job.input as unknown as VideoInput).durationSeconds };
  const options = job.kind === 'IMAGE' ? undefined : priceOptionsOf(job.input as unknown as VideoInput);
  const quote = await deps.catalog.priceUsage(model, usage, options).catch(() => ({ providerCostCents: 0 }));
  return quote.providerCostCents;
}

/** The job's price charged in full: the provider makes (and bills) the task whether or not anyone wants it. */
async function chargeCancelled(deps: MediaGatewayDeps, tx: Tx, job: JobRow): Promise<CancelSettlement> {
  const input = job.input as { providerId?: string | null; op?: string };
  const model = { id: job.modelId, slug: job.modelSlug, providerId: input.providerId ?? null };
  const settled = await settleDelivered(deps, tx, {
    userId: job.userId,
    subscriptionId: job.subscriptionId,
    model,
    requestId: job.requestId,
    jobId: job.id,
    operation: job.kind === 'IMAGE' ? 'image.generate' : `video.${input.op ?? 'generate'}`,
    status: 'PARTIAL',
    chargeTokens: job.tokensReserved,
    providerCostCents: await providerCost(deps, job, model),
    inputUnits: 0,
    outputUnits: 0,
    latencyMs: job.startedAt ? deps.clock.now().getTime() - job.startedAt.getTime() : 0,
    accountId: job.providerAccountId,
    metadata: { canceled: true, chargedBecause: 'the provider could not stop the task', externalId: job.externalId },
    generation: null,
  });
  return {
    tokensConsumed: settled.chargedTokens,
    message: `You cancelled this job after the provider had started it. The provider cannot stop it and bills it, so its price (${settled.chargedTokens} tokens) was charged.`,
  };
}

/**
 * How media jobs are cancelled (registered with the jobs service): refunded in full when the provider never got the
 * job, or when it confirms it stopped the task unbilled; otherwise charged their full price, since the provider keeps
 * making (and billing) the task.
 */
export function createJobCanceller(deps: MediaGatewayDeps): JobCanceller {
  return {
    stop: (job) => (job.kind === 'IMAGE' ? Promise.resolve(false) : stopVideoUpstream(deps, job)),

    async settle(tx, job, stopped) {
      if (handedOver(job) && !stopped) return chargeCancelled(deps, tx, job);
      await deps.wallet.release({ requestId: job.requestId, reason: 'Refunded: the job was cancelled' }, tx);
      return {
        tokensConsumed: 0,
        message: stopped
          ? 'You cancelled this job and the provider stopped it unbilled; the reserved credits were refunded.'
          : 'You cancelled this job before the provider got it; the reserved credits were refunded.',
      };
    },
  };
}
