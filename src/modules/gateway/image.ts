import { meteredRequestId } from './metering.js';
import type { Principal } from '../../platform/auth/plugin.js';
import { AppError, badRequest } from '../../platform/http/errors.js';
import type { GatewayModel } from '../catalog/service.js';
import type { JobRow } from '../jobs/service.js';
import { checkAccess } from './access.js';
import { asAppError, failJob, keepOutput, negativePromptOf, refundFailed, requireCapability, resolveMediaModel, settleDelivered, settleDeliveredNow, succeedJob, type MediaGatewayDeps } from './media-common.js';
import { seedFrom } from './providers/media/local-media.js';
import type { ImageRequest, MediaAdapter, MediaFile, MediaOutput } from './providers/media/media-types.js';
import { imageSizeRule, snapImageSize } from './providers/media/sizes.js';
import { UpstreamError } from './providers/types.js';

export const IMAGE_ROUTE = 'POST /v1/ai/image';
export const MEDIA_RUN_QUEUE = 'media.job-run';
/**
 * An image job's reservation outlives the process that runs it: if that process dies, the jobs sweeper has the job run
 * again (within about a minute) and the rerun settles this reservation; only a job nobody runs for the whole run
 * queue's expiry is refunded by the wallet sweeper.
 */
const IMAGE_JOB_LEASE_SECONDS = 15 * 60;

export interface ImageBody {
  model: string;
  prompt: string;
  negativePrompt?: string;
  width?: number;
  height?: number;
  count?: number;
  seed?: number;
  initImageUrl?: string;
  strength?: number;
  async?: boolean;
}

/** What one image generation asks for, after defaults and snapping (stored as the job input of async calls). */
export interface ImageSpec {
  prompt: string;
  negativePrompt: string | null;
  width: number;
  height: number;
  requestedWidth: number;
  requestedHeight: number;
  count: number;
  seed: number | null;
  strength: number | null;
  /** Our own raw URL of the source image (copied into storage at submit). */
  initImageUrl: string | null;
}

export interface ImageAnswer {
  images: Array<{ url: string; mimeType: string }>;
  usage: { imagesGenerated: number; imagesRequested: number; creditsConsumed: number };
  model: string;
  requestId: string;
  width: number;
  height: number;
}

const controlNumber = (model: GatewayModel, key: string, field: 'default' | 'min' | 'max'): number | undefined => {
  const control = model.capabilities.controls[key] as Record<string, unknown> | undefined | null;
  const value = control?.[field];
  return typeof value === 'number' ? value : undefined;
};

/** Width and height: the model's defaults when omitted, its bounds checked, then snapped to what it accepts. */
export function imageSize(model: GatewayModel, width: number | undefined, height: number | undefined) {
  const requestedWidth = width ?? controlNumber(model, 'width', 'default') ?? 1024;
  const requestedHeight = height ?? controlNumber(model, 'height', 'default') ?? 1024;
  for (const [field, value] of [['width', requestedWidth], ['height', requestedHeight]] as const) {
    const control = model.capabilities.controls[field] as { type?: string } | undefined;
    if (control?.type !== 'integer') continue; // menus and ratios are snapped instead
    const min = controlNumber(model, field, 'min');
    const max = controlNumber(model, field, 'max');
    if ((min !== undefined && value < min) || (max !== undefined && value > max)) {
      throw badRequest(`${field} must be between ${min ?? 1} and ${max ?? value} pixels for the model "${model.slug}" (got ${value}).`, [
        { field, message: `must be ${min ?? 1}-${max ?? value}` },
      ]);
    }
  }
  const snapped = snapImageSize(imageSizeRule(model.providerSlug, model.upstreamModel), requestedWidth, requestedHeight);
  return { width: snapped.width, height: snapped.height, requestedWidth, requestedHeight };
}

/** Width and height of a PNG, JPEG-less fallback: null when the bytes are not a PNG. */
export function pngSize(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length < 24 || bytes.readUInt32BE(0) !== 0x89504e47 || bytes.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

export interface ProducedImages {
  images: Array<{ url: string; mimeType: string }>;
  calls: number;
  failedCalls: number;
  accountId: string | null;
  /** Images one call returned at most, when the model under-delivered. */
  underDeliveredAt: number | null;
}

export function createImageGateway(deps: MediaGatewayDeps) {
  const { db, clock, logger, catalog, pool, files, wallet, jobs, queue } = deps;

  async function readSource(url: string, ownerId: string, keep: boolean): Promise<{ file: MediaFile; url: string }> {
    const source = await files.readSource(url, { accept: ['image'], what: 'the source image' });
    if (!keep || source.origin === 'file') return { file: { bytes: source.bytes, mimeType: source.contentType }, url };
    const saved = await files.saveBytes({ ownerId, kind: 'INIT_IMAGE', contentType: source.contentType, body: source.bytes, sourceUrl: source.origin === 'remote' ? url : null });
    return { file: { bytes: source.bytes, mimeType: saved.contentType }, url: saved.url };
  }

  /** Checks and normalises a request: everything that can be refused synchronously is refused here. */
  async function prepare(principal: Principal, body: ImageBody, keepSource: boolean) {
    const { model, adapter } = await resolveMediaModel(deps, body.model, 'IMAGE', IMAGE_ROUTE);
    requireCapability(adapter, 'generateImage', model, 'make images');
    const size = imageSize(model, body.width, body.height);
    const access = await checkAccess(deps, principal, model);
    const source = body.initImageUrl ? await readSource(body.initImageUrl, principal.userId, keepSource) : null;
    const spec: ImageSpec = {
      prompt: body.prompt,
      negativePrompt: negativePromptOf(body.negativePrompt),
      ...size,
      count: body.count ?? 1,
      seed: body.seed ?? null,
      strength: body.initImageUrl ? body.strength ?? null : null,
      initImageUrl: source?.url ?? null,
    };
    return { model, adapter, access, spec, initImage: source?.file };
  }

  /**
   * Makes `spec.count` images: one call, then, when the model returned fewer, concurrent top-up calls of the size it
   * managed (each with its own seed offset, so no image repeats). A failed top-up call just delivers nothing: the
   * caller is charged for the images delivered. Every image is copied into our storage.
   */
  async function produce(userId: string, model: GatewayModel, adapter: MediaAdapter, spec: ImageSpec, initImage: MediaFile | undefined): Promise<ProducedImages> {
    const generate = requireCapability(adapter, 'generateImage', model, 'make images');
    const request = (count: number, seed: number | null): ImageRequest => ({
      model: model.upstreamModel,
      prompt: spec.prompt,
      negativePrompt: spec.negativePrompt,
      width: spec.width,
      height: spec.height,
      count,
      seed,
      initImage,
      strength: spec.strength,
    });
    const first = await pool.run(model.providerSlug, (_text, credential) => generate(credential, request(spec.count, spec.seed)));
    const outputs: MediaOutput[] = first.value.images.slice(0, spec.count);
    if (outputs.length === 0) throw new UpstreamError('server', 'The provider returned no image.', null, 'empty_result');
    let calls = 1;
    let failedCalls = 0;
    let underDeliveredAt: number | null = null;
    if (outputs.length < spec.count) {
      const perCall = Math.max(1, Math.min(first.value.maxPerCall ?? outputs.length, outputs.length));
      underDeliveredAt = perCall;
      await catalog.recordMaxBatch(model.id, perCall).catch((err: unknown) => logger.warn({ err, model: model.slug }, 'recording maxBatch failed'));
      const baseSeed = spec.seed ?? seedFrom(spec.prompt);
      const topUps: Array<{ count: number; offset: number }> = [];
      for (let offset = outputs.length; offset < spec.count; offset += perCall) topUps.push({ count: Math.min(perCall, spec.count - offset), offset });
      const results = await Promise.allSettled(
        topUps.map((t) => pool.run(model.providerSlug, (_text, credential) => generate(credential, request(t.count, (baseSeed + t.offset) % 0x1_0000_0000)))),
      );
      calls += topUps.length;
      results.forEach((result, i) => {
        if (result.status === 'fulfilled') outputs.push(...result.value.value.images.slice(0, topUps[i]!.count));
        else {
          failedCalls++;
          logger.warn({ err: result.reason, model: model.slug }, 'an image top-up call failed; its images are not charged');
        }
      });
    }
    const images: ProducedImages['images'] = [];
    for (const output of outputs.slice(0, spec.count)) {
      try {
        const kept = await keepOutput(deps, userId, output, 'IMAGE', 'image/png');
        images.push({ url: kept.url, mimeType: kept.mimeType });
      } catch (err) {
        logger.warn({ err, model: model.slug }, 'copying a provider image failed; it is not charged');
      }
    }
    if (images.length === 0) throw new UpstreamError('server', "The provider's images could not be downloaded.", null, 'download_failed');
    return { images, calls, failedCalls, accountId: first.accountId, underDeliveredAt };
  }

  /** Prices of 0..count images, fixed when the call is accepted. */
  async function priceTable(model: GatewayModel, count: number): Promise<number[]> {
    const table = [0];
    for (let k = 1; k <= count; k++) table.push(await catalog.estimateTokens(model, { kind: 'image', count: k }));
    return table;
  }

  const metadataOf = (spec: ImageSpec, produced: ProducedImages, principal: { apiKeyId?: string | null }, reserved: number) => ({
    imagesRequested: spec.count,
    width: spec.width,
    height: spec.height,
    ...(spec.width !== spec.requestedWidth || spec.height !== spec.requestedHeight ? { requestedSize: `${spec.requestedWidth}x${spec.requestedHeight}` } : {}),
    calls: produced.calls,
    failedCalls: produced.failedCalls,
    reservedTokens: reserved,
    ...(produced.underDeliveredAt ? { maxPerCall: produced.underDeliveredAt } : {}),
    ...(principal.apiKeyId ? { apiKeyId: principal.apiKeyId } : {}),
  });

  async function generateSync(principal: Principal, body: ImageBody, options: { tags?: string[]; caption?: string } = {}): Promise<ImageAnswer> {
    const started = performance.now();
    const { model, adapter, access, spec, initImage } = await prepare(principal, body, false);
    const requestId = meteredRequestId();
    const prices = await priceTable(model, spec.count);
    await deps.metering.reserve(principal, { model, operation: 'image.generate', tokens: prices[spec.count]!, requestId, started }, { access });
    let produced: ProducedImages;
    try {
      produced = await produce(principal.userId, model, adapter, spec, initImage);
    } catch (err) {
      const error = asAppError(err, model.slug);
      await db
        .transaction((tx) =>
          refundFailed(deps, tx, { userId: principal.userId, subscriptionId: access.subscriptionId, model, requestId, operation: 'image.generate', error, latencyMs: performance.now() - started }),
        )
        .catch((releaseError: unknown) => logger.error({ err: releaseError, requestId }, 'refunding a failed image call failed'));
      throw error;
    }
    const delivered = produced.images.length;
    const cost = await catalog.priceUsage(model, { images: delivered });
    const settled = await settleDeliveredNow(deps, {
      userId: principal.userId,
      subscriptionId: access.subscriptionId,
      model,
      requestId,
      operation: 'image.generate',
      status: delivered < spec.count ? 'PARTIAL' : 'SUCCESS',
      chargeTokens: prices[delivered]!,
      providerCostCents: cost.providerCostCents,
      inputUnits: spec.count,
      outputUnits: delivered,
      latencyMs: performance.now() - started,
      accountId: produced.accountId,
      metadata: metadataOf(spec, produced, principal, prices[spec.count]!),
      generation: { kind: 'IMAGE', prompt: options.caption ?? spec.prompt, output: { images: produced.images }, thumbnailUrl: produced.images[0]!.url, tags: options.tags },
    });
    return {
      images: produced.images,
      usage: { imagesGenerated: delivered, imagesRequested: spec.count, creditsConsumed: settled.chargedTokens },
      model: model.slug,
      requestId,
      width: spec.width,
      height: spec.height,
    };
  }

  return {
    prepare,
    produce,
    generateSync,

    /**
     * `async: true`: checks what can be checked at once (model, sizes, source image, plan), fixes the price, and queues
     * the job. Credits are reserved by the job, so a balance that cannot cover it arrives on the job as
     * FAILED / QUOTA_EXCEEDED.
     */
    async submit(principal: Principal, body: ImageBody): Promise<{ jobId: string; status: 'QUEUED' }> {
      const { model, access, spec } = await prepare(principal, body, true);
      const prices = await priceTable(model, spec.count);
      const jobId = meteredRequestId();
      // The job and its queue message commit together: no job is left QUEUED with nothing to run it.
      await db.transaction(async (tx) => {
        await jobs.create(
          {
            id: jobId,
            userId: principal.userId,
            kind: 'IMAGE',
            modelId: model.id,
            modelSlug: model.slug,
            subscriptionId: access.subscriptionId,
            requestId: jobId,
            input: { ...spec, prices, owner: access.owner, providerId: model.providerId, apiKeyId: principal.apiKeyId },
            tokensReserved: prices[spec.count]!,
          },
          tx,
        );
        await queue.send(MEDIA_RUN_QUEUE, { jobId }, { tx });
      });
      return { jobId, status: 'QUEUED' };
    },

    /** Runs a queued image job (pg-boss); safe to run twice: the reservation and the settlement are keyed by the job id. */
    async runJob(job: JobRow): Promise<void> {
      const started = performance.now();
      const input = job.input as unknown as ImageSpec & { prices: number[]; owner: { userId: string } | { workspaceId: string }; providerId: string | null; apiKeyId: string | null };
      const modelRef = { id: job.modelId, slug: job.modelSlug, providerId: input.providerId };
      try {
        const access = { subscriptionId: job.subscriptionId, owner: input.owner };
        await deps.metering.reserveChecked({ userId: job.userId, apiKeyId: input.apiKeyId }, access, { model: modelRef, operation: 'image.generate', tokens: job.tokensReserved, requestId: job.requestId, jobId: job.id, started, leaseSeconds: IMAGE_JOB_LEASE_SECONDS });
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
      try {
        model = await catalog.resolveForGateway(job.modelSlug);
        const adapter = deps.adapters.get(model.providerSlug);
        if (!adapter) throw new AppError(503, 'MODEL_UNAVAILABLE', `The model "${model.slug}" has no media connection here.`);
        const initImage = input.initImageUrl ? (await readSource(input.initImageUrl, job.userId, false)).file : undefined;
        produced = await produce(job.userId, model, adapter, input, initImage);
      } catch (err) {
        const error = asAppError(err, job.modelSlug);
        await failJob(deps, job.id, error, (tx) =>
          refundFailed(deps, tx, { userId: job.userId, subscriptionId: job.subscriptionId, model: modelRef, requestId: job.requestId, jobId: job.id, operation: 'image.generate', error, latencyMs: performance.now() - started }),
        );
        return;
      }
      const delivered = produced.images.length;
      const cost = await catalog.priceUsage(model, { images: delivered }).catch(() => ({ providerCostCents: 0 }));
      await succeedJob(deps, job.id, async (tx) => {
        const settled = await settleDelivered(deps, tx, {
          userId: job.userId,
          subscriptionId: job.subscriptionId,
          model: modelRef,
          requestId: job.requestId,
          jobId: job.id,
          operation: 'image.generate',
          status: delivered < input.count ? 'PARTIAL' : 'SUCCESS',
          chargeTokens: input.prices[delivered] ?? job.tokensReserved,
          providerCostCents: cost.providerCostCents,
          inputUnits: input.count,
          outputUnits: delivered,
          latencyMs: performance.now() - started,
          accountId: produced.accountId,
          metadata: metadataOf(input, produced, { apiKeyId: input.apiKeyId }, job.tokensReserved),
          generation: { kind: 'IMAGE', prompt: input.prompt, output: { images: produced.images }, thumbnailUrl: produced.images[0]!.url },
        });
        return {
          output: { images: produced.images, usage: { imagesGenerated: delivered, imagesRequested: input.count, creditsConsumed: settled.chargedTokens } },
          tokensConsumed: settled.chargedTokens,
        };
      });
    },
  };
}

export type ImageGateway = ReturnType<typeof createImageGateway>;
