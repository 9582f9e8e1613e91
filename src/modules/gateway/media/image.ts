import { unkeyedRequest } from '../metering/idempotency.js';
import type { Principal } from '../../../platform/auth/plugin.js';
import { badRequest } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import type { JobRow } from '../../jobs/service.js';
import { admitJob, checkAccess } from '../metering/access.js';
import { runImageJob } from './image-job.js';
import { commitJobWithKey } from './job-key.js';
import { checkValue, descriptorOf } from './controls.js';
import {
  imageCharge,
  imageMetadata,
  imagePricing,
  produceImages,
  readImageSource,
  tokenUsageOf,
  type ImageSpec,
  type ProducedImages,
} from './image-produce.js';
import { startCallSpan, traceCarrier } from '../routing/call-span.js';
import {
  asAppError,
  negativePromptOf,
  refundFailed,
  requireCapability,
  resolveMediaModel,
  settleDeliveredNow,
  type MediaCallOptions,
  type MediaGatewayDeps,
} from './common.js';
import type { MediaAdapter, MediaFile } from '../providers/media/media-types.js';
import { imageSizeRule, snapImageSize } from '../providers/media/sizes.js';

export const IMAGE_ROUTE = 'POST /v1/ai/image';
export const MEDIA_RUN_QUEUE = 'media.job-run';

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
  /** Checked against the model's `controls.quality`; see `imageQuality`. */
  quality?: string;
  async?: boolean;
}

export interface ImageAnswer {
  images: Array<{ url: string; mimeType: string }>;
  usage: {
    imagesGenerated: number;
    imagesRequested: number;
    creditsConsumed: number;
    /** Token-billed models (GPT Image): what the images were charged for. */
    quality?: string;
    size?: string;
    inputTokens?: number;
    inputTokensDetails?: { textTokens: number; imageTokens: number };
    outputTokens?: number;
    totalTokens?: number;
  };
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
  for (const [field, value] of [
    ['width', requestedWidth],
    ['height', requestedHeight],
  ] as const) {
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

/**
 * The quality sent upstream, or null for none. A model whose controls list `quality` takes one of its values (omitted:
 * its default); `auto` ("let the model choose") is taken by every model, meaning its default where it has no such
 * value. Any other value is refused with a 400 naming the field, never left out: a quality changes both the picture
 * and its price (GPT Image's high costs about 15 times its low), so an answer that ignored it would not be what was
 * asked for or what the caller expected to pay. So it is not one of the hints named in `x-storefront-ignored`.
 */
export function imageQuality(model: GatewayModel, quality: string | undefined): string | null {
  const control = descriptorOf(model.capabilities.controls, 'quality');
  const fallback = typeof control?.default === 'string' ? control.default : null;
  if (quality === undefined || (quality === 'auto' && !control?.values?.includes('auto'))) return fallback;
  if (!control) {
    throw badRequest(
      `The model "${model.slug}" has no quality setting: leave quality out (or send "auto"), or choose a model whose capabilities.controls list quality.`,
      [{ field: 'quality', message: 'not supported by this model' }],
    );
  }
  checkValue(model, 'quality', control, quality);
  return quality;
}

/** Width and height of a PNG, JPEG-less fallback: null when the bytes are not a PNG. */
export function pngSize(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length < 24 || bytes.readUInt32BE(0) !== 0x89504e47 || bytes.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/**
 * The image gateway: checks and sizing, the synchronous call and the async submit here; making the images
 * (image-produce.ts) and running a queued job (image-job.ts) in their own files.
 */
export function createImageGateway(deps: MediaGatewayDeps) {
  const { db, logger, jobs, queue } = deps;

  /** Checks and normalises a request: everything that can be refused synchronously is refused here. */
  async function prepare(principal: Principal, body: ImageBody, keepSource: boolean) {
    const { model, adapter } = await resolveMediaModel(deps, body.model, 'IMAGE', IMAGE_ROUTE);
    requireCapability(adapter, 'generateImage', model, 'make images');
    const size = imageSize(model, body.width, body.height);
    const quality = imageQuality(model, body.quality);
    const access = await checkAccess(deps, principal, model);
    const source = body.initImageUrl ? await readImageSource(deps, body.initImageUrl, principal.userId, keepSource) : null;
    const spec: ImageSpec = {
      prompt: body.prompt,
      negativePrompt: negativePromptOf(body.negativePrompt),
      ...size,
      count: body.count ?? 1,
      seed: body.seed ?? null,
      strength: body.initImageUrl ? (body.strength ?? null) : null,
      initImageUrl: source?.url ?? null,
      quality,
    };
    return { model, adapter, access, spec, initImage: source?.file };
  }

  async function generateSync(
    principal: Principal,
    body: ImageBody,
    options: MediaCallOptions & { tags?: string[]; caption?: string } = {},
  ): Promise<ImageAnswer> {
    const { timing } = options;
    const metered = options.request ?? unkeyedRequest();
    const started = performance.now();
    const { model, adapter, access, spec, initImage } = await prepare(principal, body, false);
    const { requestId } = metered;
    const pricing = await imagePricing(deps, model, spec);
    const reserving = performance.now();
    timing?.add('route', reserving - started);
    const span = startCallSpan({ operation: 'generate_content', providerSlug: model.providerSlug, model: model.slug, requestId });
    await deps.metering
      .reserve(principal, { model, operation: 'image.generate', tokens: pricing.reserved, requestId, started, key: metered.key }, { access })
      .catch((err: unknown) => {
        span.failed(err);
        throw err;
      });
    const producing = performance.now();
    timing?.add('reserve', producing - reserving);
    let produced: ProducedImages;
    try {
      produced = await span.run(() => produceImages(deps, principal.userId, model, adapter, spec, initImage));
      timing?.add('upstream', performance.now() - producing);
    } catch (err) {
      const error = asAppError(err, model.slug);
      span.failed(error);
      await db
        .transaction((tx) =>
          refundFailed(deps, tx, {
            userId: principal.userId,
            subscriptionId: access.subscriptionId,
            model,
            requestId,
            operation: 'image.generate',
            error,
            latencyMs: performance.now() - started,
          }),
        )
        .catch((releaseError: unknown) => logger.error({ err: releaseError, requestId }, 'refunding a failed image call failed'));
      throw error;
    }
    const delivered = produced.images.length;
    const charge = await imageCharge(deps, model, spec, produced, pricing);
    const settling = performance.now();
    const settled = await settleDeliveredNow(deps, {
      key: metered.key,
      userId: principal.userId,
      subscriptionId: access.subscriptionId,
      model,
      requestId,
      operation: 'image.generate',
      status: delivered < spec.count ? 'PARTIAL' : 'SUCCESS',
      chargeTokens: charge.chargeTokens,
      providerCostCents: charge.providerCostCents,
      inputUnits: spec.count,
      outputUnits: delivered,
      latencyMs: performance.now() - started,
      accountId: produced.accountId,
      metadata: imageMetadata(spec, produced, principal, pricing.reserved, charge.tokens),
      generation: {
        kind: 'IMAGE',
        prompt: options.caption ?? spec.prompt,
        output: { images: produced.images },
        thumbnailUrl: produced.images[0]!.url,
        tags: options.tags,
      },
    });
    timing?.add('settle', performance.now() - settling);
    span.answered({
      responseModel: model.upstreamModel,
      chargedTokens: settled.chargedTokens,
      attributes: { 'storefront.images_generated': delivered, 'storefront.images_requested': spec.count },
    });
    return {
      images: produced.images,
      usage: { imagesGenerated: delivered, imagesRequested: spec.count, creditsConsumed: settled.chargedTokens, ...tokenUsageOf(charge.tokens) },
      model: model.slug,
      requestId,
      width: spec.width,
      height: spec.height,
    };
  }

  return {
    prepare,
    produce: (userId: string, model: GatewayModel, adapter: MediaAdapter, spec: ImageSpec, initImage: MediaFile | undefined): Promise<ProducedImages> =>
      produceImages(deps, userId, model, adapter, spec, initImage),
    generateSync,

    /**
     * `async: true`: checks what can be checked at once (model, sizes, source image, plan), fixes the price, and queues
     * the job. Credits are reserved by the job, so a balance that cannot cover it arrives on the job as
     * FAILED / QUOTA_EXCEEDED.
     */
    async submit(principal: Principal, body: ImageBody, options: MediaCallOptions = {}): Promise<{ jobId: string; status: 'QUEUED' }> {
      const started = performance.now();
      const { model, access, spec } = await prepare(principal, body, true);
      const pricing = await imagePricing(deps, model, spec);
      const request = options.request ?? unkeyedRequest();
      const jobId = request.requestId;
      options.timing?.add('route', performance.now() - started);
      // The job, its queue message and the key's answer commit together: no job is left QUEUED with nothing to run
      // it, and a retry after a crash finds this job rather than queueing a second.
      return commitJobWithKey(deps, principal.userId, request, { jobId, status: 'QUEUED' as const }, options.timing, async (tx) => {
        await admitJob(jobs, tx, access.owner, access.limits);
        await jobs.create(
          {
            id: jobId,
            userId: principal.userId,
            kind: 'IMAGE',
            modelId: model.id,
            modelSlug: model.slug,
            subscriptionId: access.subscriptionId,
            requestId: jobId,
            // `prices: null` marks a token-billed job: it settles from the usage its run reports, capped at tokensReserved.
            input: { ...spec, prices: pricing.prices, owner: access.owner, providerId: model.providerId, apiKeyId: principal.apiKeyId, trace: traceCarrier() },
            tokensReserved: pricing.reserved,
          },
          tx,
        );
        await queue.send(MEDIA_RUN_QUEUE, { jobId }, { tx });
      });
    },

    /** Runs a queued image job (pg-boss); safe to run twice: the reservation and the settlement are keyed by the job id. */
    runJob: (job: JobRow): Promise<void> => runImageJob(deps, job),
  };
}

export type ImageGateway = ReturnType<typeof createImageGateway>;
