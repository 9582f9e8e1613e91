import { AppError } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import type { JobRow } from '../../jobs/service.js';
import { imageCharge, imageMetadata, produceImages, readImageSource, tokenUsageOf, type ImageSpec, type ProducedImages } from './image-produce.js';
import { startCallSpan } from '../routing/call-span.js';
import { asAppError, failJob, refundFailed, settleDelivered, succeedJob, type MediaGatewayDeps } from './common.js';

/**
 * An image job's reservation outlives the process that runs it: if that process dies, the jobs sweeper has the job run
 * again (within about a minute) and the rerun settles this reservation; only a job nobody runs for the whole run
 * queue's expiry is refunded by the wallet sweeper.
 */
const IMAGE_JOB_LEASE_SECONDS = 15 * 60;

/** Runs a queued image job (pg-boss); safe to run twice: the reservation and the settlement are keyed by the job id. */
export async function runImageJob(deps: MediaGatewayDeps, job: JobRow): Promise<void> {
  const { clock, catalog, wallet, jobs } = deps;
  const started = performance.now();
  // `prices`: the per-image prices fixed at submit; null for a token-billed model (settled from its usage).
  const input = job.input as unknown as ImageSpec & {
    prices: number[] | null;
    owner: { userId: string } | { workspaceId: string };
    providerId: string | null;
    apiKeyId: string | null;
    trace?: Record<string, string>;
  };
  const modelRef = { id: job.modelId, slug: job.modelSlug, providerId: input.providerId };
  try {
    const access = { subscriptionId: job.subscriptionId, owner: input.owner };
    await deps.metering.reserveChecked({ userId: job.userId, apiKeyId: input.apiKeyId }, access, {
      model: modelRef,
      operation: 'image.generate',
      tokens: job.tokensReserved,
      requestId: job.requestId,
      jobId: job.id,
      started,
      leaseSeconds: IMAGE_JOB_LEASE_SECONDS,
    });
  } catch (err) {
    if (err instanceof AppError && err.code === 'QUOTA_EXCEEDED') {
      await failJob(deps, job.id, { code: err.code, message: err.message, details: err.details });
      return;
    }
    throw err;
  }
  if (!(await jobs.update(job.id, { status: 'RUNNING', startedAt: clock.now(), progress: 0.1 }))) {
    // Cancelled meanwhile: the cancellation found nothing to refund yet, so this reservation is returned here.
    await wallet.release({ requestId: job.requestId, reason: 'Refunded: the job was cancelled' });
    return;
  }
  let produced: ProducedImages;
  let model: GatewayModel;
  // A child of the request that queued the job (its trace context rode in the job's input).
  const span = startCallSpan({
    operation: 'generate_content',
    providerSlug: job.modelSlug.split('/')[0]!,
    model: job.modelSlug,
    requestId: job.requestId,
    parent: input.trace,
  });
  try {
    model = await catalog.resolveForGateway(job.modelSlug);
    const adapter = deps.adapters.get(model.providerSlug);
    if (!adapter) throw new AppError(503, 'MODEL_UNAVAILABLE', `The model "${model.slug}" has no media connection here.`);
    const initImage = input.initImageUrl ? (await readImageSource(deps, input.initImageUrl, job.userId, false)).file : undefined;
    produced = await span.run(() => produceImages(deps, job.userId, model, adapter, input, initImage));
  } catch (err) {
    const error = asAppError(err, job.modelSlug);
    span.failed(error);
    await failJob(deps, job.id, error, (tx) =>
      refundFailed(deps, tx, {
        userId: job.userId,
        subscriptionId: job.subscriptionId,
        model: modelRef,
        requestId: job.requestId,
        jobId: job.id,
        operation: 'image.generate',
        error,
        latencyMs: performance.now() - started,
      }),
    );
    return;
  }
  const delivered = produced.images.length;
  // The reservation is the price fixed at submit: a token-billed job is charged its usage, never more than that.
  const charge = await imageCharge(deps, model, input, produced, { reserved: job.tokensReserved, prices: input.prices ?? null });
  await succeedJob(deps, job.id, async (tx) => {
    const settled = await settleDelivered(deps, tx, {
      userId: job.userId,
      subscriptionId: job.subscriptionId,
      model: modelRef,
      requestId: job.requestId,
      jobId: job.id,
      operation: 'image.generate',
      status: delivered < input.count ? 'PARTIAL' : 'SUCCESS',
      chargeTokens: charge.chargeTokens,
      providerCostCents: charge.providerCostCents,
      inputUnits: input.count,
      outputUnits: delivered,
      latencyMs: performance.now() - started,
      accountId: produced.accountId,
      metadata: imageMetadata(input, produced, { apiKeyId: input.apiKeyId }, job.tokensReserved, charge.tokens),
      generation: { kind: 'IMAGE', prompt: input.prompt, output: { images: produced.images }, thumbnailUrl: produced.images[0]!.url },
    });
    return {
      output: {
        images: produced.images,
        usage: { imagesGenerated: delivered, imagesRequested: input.count, creditsConsumed: settled.chargedTokens, ...tokenUsageOf(charge.tokens) },
      },
      tokensConsumed: settled.chargedTokens,
    };
  });
  span.answered({
    responseModel: model.upstreamModel,
    chargedTokens: charge.chargeTokens,
    ...(charge.tokens ? { usage: { inputTokens: charge.tokens.inputTokens, outputTokens: charge.tokens.outputTokens } } : {}),
    attributes: { 'storefront.images_generated': delivered, 'storefront.images_requested': input.count, 'storefront.job_id': job.id },
  });
}
