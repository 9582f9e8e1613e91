import { imageTokenTable, outputTokensPerImage, promptTokenBound, type GatewayModel } from '../../catalog/service.js';
import { keepOutput, requireCapability, type MediaGatewayDeps } from './common.js';
import { seedFrom } from '../providers/local/media.js';
import type { ImageRequest, ImageResult, ImageTokenUsage, MediaAdapter, MediaFile, MediaOutput } from '../providers/media/media-types.js';
import { UpstreamError } from '../providers/types.js';

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
  /** The quality sent upstream, in the provider's terms (null, or absent in jobs queued before it existed: none). */
  quality?: string | null;
}

export interface ProducedImages {
  images: Array<{ url: string; mimeType: string }>;
  calls: number;
  failedCalls: number;
  accountId: string | null;
  /** Images one call returned at most, when the model under-delivered. */
  underDeliveredAt: number | null;
  /** The quality and size the first call reports it used (null: not reported). */
  quality: string | null;
  size: { width: number; height: number };
  /** Token usage summed over the calls that reported it, and the images of those that did and did not. */
  tokens: { usage: ImageTokenUsage; reportedImages: number; unreportedCalls: number; unreportedImages: number };
}

/** The source image of a call; `keep` copies one that is not ours into storage (an async job reads it later). */
export async function readImageSource(
  deps: Pick<MediaGatewayDeps, 'files'>,
  url: string,
  ownerId: string,
  keep: boolean,
): Promise<{ file: MediaFile; url: string }> {
  const { files } = deps;
  const source = await files.readSource(url, { accept: ['image'], what: 'the source image' });
  if (!keep || source.origin === 'file') return { file: { bytes: source.bytes, mimeType: source.contentType }, url };
  const saved = await files.saveBytes({
    ownerId,
    kind: 'INIT_IMAGE',
    contentType: source.contentType,
    body: source.bytes,
    sourceUrl: source.origin === 'remote' ? url : null,
  });
  return { file: { bytes: source.bytes, mimeType: saved.contentType }, url: saved.url };
}

/**
 * Makes `spec.count` images: one call, then, when the model returned fewer, concurrent top-up calls of the size it
 * managed (each with its own seed offset, so no image repeats). A failed top-up call just delivers nothing: the
 * caller is charged for the images delivered. Every image is copied into our storage.
 */
export async function produceImages(
  deps: MediaGatewayDeps,
  userId: string,
  model: GatewayModel,
  adapter: MediaAdapter,
  spec: ImageSpec,
  initImage: MediaFile | undefined,
): Promise<ProducedImages> {
  const { catalog, logger, pool } = deps;
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
    quality: spec.quality ?? null,
  });
  const first = await pool.run(model.providerSlug, (_text, credential) => generate(credential, request(spec.count, spec.seed)));
  const outputs: MediaOutput[] = first.value.images.slice(0, spec.count);
  if (outputs.length === 0) throw new UpstreamError('server', 'The provider returned no image.', null, 'empty_result');
  const tokens: ProducedImages['tokens'] = {
    usage: { inputTokens: 0, textInputTokens: 0, imageInputTokens: 0, outputTokens: 0 },
    reportedImages: 0,
    unreportedCalls: 0,
    unreportedImages: 0,
  };
  const count = (result: ImageResult, taken: number) => {
    if (!result.usage) {
      tokens.unreportedCalls++;
      tokens.unreportedImages += taken;
      return;
    }
    for (const key of Object.keys(tokens.usage) as Array<keyof ImageTokenUsage>) tokens.usage[key] += result.usage[key];
    tokens.reportedImages += result.images.length;
  };
  count(first.value, outputs.length);
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
      if (result.status === 'fulfilled') {
        const taken = result.value.value.images.slice(0, topUps[i]!.count);
        outputs.push(...taken);
        count(result.value.value, taken.length);
      } else {
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
  const size = { width: first.value.width, height: first.value.height };
  return { images, calls, failedCalls, accountId: first.accountId, underDeliveredAt, quality: first.value.quality ?? null, size, tokens };
}

/**
 * What a call reserves, fixed when it is accepted. Per-image models: the prices of 0..count images (the charge is the
 * price of those delivered). Token-billed models (GPT Image, `prices: null`): the dearest the call can cost, its
 * quality's output tokens at its size for every image (`auto` counted as the dearest quality), plus the prompt's and
 * the source image's most; one call makes up to 10 images, so the input is counted once.
 */
export async function imagePricing(
  deps: Pick<MediaGatewayDeps, 'catalog'>,
  model: GatewayModel,
  spec: ImageSpec,
): Promise<{ reserved: number; prices: number[] | null }> {
  if (imageTokenTable(model.capabilities)) {
    const reserved = await deps.catalog.estimateTokens(model, {
      kind: 'image',
      count: spec.count,
      quality: spec.quality ?? null,
      width: spec.width,
      height: spec.height,
      promptTokens: promptTokenBound(spec.prompt),
      sourceImages: spec.initImageUrl ? 1 : 0,
    });
    return { reserved, prices: null };
  }
  const prices = [0];
  for (let k = 1; k <= spec.count; k++) prices.push(await deps.catalog.estimateTokens(model, { kind: 'image', count: k }));
  return { reserved: prices[spec.count]!, prices };
}

/** The quality, size and tokens a token-billed call is charged for (the usage record's metadata and the answer's usage). */
export interface ImageTokenCharge extends ImageTokenUsage {
  quality: string | null;
  size: string;
  /** `provider`: the usage the provider reported; `table`: it reported none, so its documented table for the quality and size. */
  source: 'provider' | 'table';
}

/**
 * The charge of the images delivered. Per-image models: their price, fixed at acceptance. Token-billed models: the
 * usage the provider reported, its output tokens counted for the images delivered only (an image that could not be
 * copied is not charged); a call that reported none is charged its table price (the reported quality and size, else
 * those asked, `auto` as the dearest) with the prompt as reserved. Never more than was reserved.
 */
export async function imageCharge(
  deps: Pick<MediaGatewayDeps, 'catalog' | 'logger'>,
  model: GatewayModel,
  spec: ImageSpec,
  produced: ProducedImages,
  pricing: { reserved: number; prices: number[] | null },
): Promise<{ chargeTokens: number; providerCostCents: number; tokens: ImageTokenCharge | null }> {
  const delivered = produced.images.length;
  const table = imageTokenTable(model.capabilities);
  if (pricing.prices || !table) {
    const cost = await deps.catalog.priceUsage(model, { images: delivered }).catch(() => ({ providerCostCents: 0 }));
    return { chargeTokens: pricing.prices?.[delivered] ?? pricing.reserved, providerCostCents: cost.providerCostCents, tokens: null };
  }
  const { usage, reportedImages, unreportedCalls } = produced.tokens;
  const { width, height } = produced.size;
  const quality = produced.quality ?? spec.quality ?? null;
  const perImage = reportedImages > 0 ? usage.outputTokens / reportedImages : outputTokensPerImage(table, quality, width, height);
  const textInputTokens = usage.textInputTokens + unreportedCalls * promptTokenBound(spec.prompt);
  const imageInputTokens = usage.imageInputTokens + (spec.initImageUrl ? unreportedCalls * table.sourceImageMax : 0);
  const charged: ImageTokenCharge = {
    inputTokens: textInputTokens + imageInputTokens,
    textInputTokens,
    imageInputTokens,
    outputTokens: Math.ceil(perImage * delivered),
    quality,
    size: `${width}x${height}`,
    source: unreportedCalls > 0 ? 'table' : 'provider',
  };
  try {
    const quote = await deps.catalog.priceUsage(model, { inputTokens: charged.inputTokens, imageInputTokens, outputTokens: charged.outputTokens });
    return { chargeTokens: Math.min(quote.tokens, pricing.reserved), providerCostCents: quote.providerCostCents, tokens: charged };
  } catch (err) {
    // The row lost a token price after the call was accepted: the reservation was its price.
    deps.logger.warn({ err, model: model.slug }, 'pricing an image call by its tokens failed; charged what was reserved');
    return { chargeTokens: pricing.reserved, providerCostCents: 0, tokens: charged };
  }
}

/** The answer's `usage` fields of a token-billed call (OpenAI's names, in camel case). */
export const tokenUsageOf = (tokens: ImageTokenCharge | null) =>
  tokens
    ? {
        quality: tokens.quality ?? 'auto',
        size: tokens.size,
        inputTokens: tokens.inputTokens,
        inputTokensDetails: { textTokens: tokens.textInputTokens, imageTokens: tokens.imageInputTokens },
        outputTokens: tokens.outputTokens,
        totalTokens: tokens.inputTokens + tokens.outputTokens,
      }
    : {};

/** The usage record's metadata of an image call. */
export const imageMetadata = (
  spec: ImageSpec,
  produced: ProducedImages,
  principal: { apiKeyId?: string | null },
  reserved: number,
  tokens: ImageTokenCharge | null = null,
) => ({
  imagesRequested: spec.count,
  width: spec.width,
  height: spec.height,
  ...(spec.width !== spec.requestedWidth || spec.height !== spec.requestedHeight ? { requestedSize: `${spec.requestedWidth}x${spec.requestedHeight}` } : {}),
  ...(spec.quality ? { requestedQuality: spec.quality } : {}),
  ...(tokens
    ? {
        quality: tokens.quality,
        size: tokens.size,
        inputTokens: tokens.inputTokens,
        textInputTokens: tokens.textInputTokens,
        imageInputTokens: tokens.imageInputTokens,
        outputTokens: tokens.outputTokens,
        tokenSource: tokens.source,
      }
    : {}),
  calls: produced.calls,
  failedCalls: produced.failedCalls,
  reservedTokens: reserved,
  ...(produced.underDeliveredAt ? { maxPerCall: produced.underDeliveredAt } : {}),
  ...(principal.apiKeyId ? { apiKeyId: principal.apiKeyId } : {}),
});
