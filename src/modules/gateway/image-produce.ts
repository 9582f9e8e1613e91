import type { GatewayModel } from '../catalog/service.js';
import { keepOutput, requireCapability, type MediaGatewayDeps } from './media-common.js';
import { seedFrom } from './providers/media/local-media.js';
import type { ImageRequest, MediaAdapter, MediaFile, MediaOutput } from './providers/media/media-types.js';
import { UpstreamError } from './providers/types.js';

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

export interface ProducedImages {
  images: Array<{ url: string; mimeType: string }>;
  calls: number;
  failedCalls: number;
  accountId: string | null;
  /** Images one call returned at most, when the model under-delivered. */
  underDeliveredAt: number | null;
}

/** The source image of a call; `keep` copies one that is not ours into storage (an async job reads it later). */
export async function readImageSource(deps: Pick<MediaGatewayDeps, 'files'>, url: string, ownerId: string, keep: boolean): Promise<{ file: MediaFile; url: string }> {
  const { files } = deps;
  const source = await files.readSource(url, { accept: ['image'], what: 'the source image' });
  if (!keep || source.origin === 'file') return { file: { bytes: source.bytes, mimeType: source.contentType }, url };
  const saved = await files.saveBytes({ ownerId, kind: 'INIT_IMAGE', contentType: source.contentType, body: source.bytes, sourceUrl: source.origin === 'remote' ? url : null });
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
export async function priceTable(deps: Pick<MediaGatewayDeps, 'catalog'>, model: GatewayModel, count: number): Promise<number[]> {
  const table = [0];
  for (let k = 1; k <= count; k++) table.push(await deps.catalog.estimateTokens(model, { kind: 'image', count: k }));
  return table;
}

/** The usage record's metadata of an image call. */
export const imageMetadata = (spec: ImageSpec, produced: ProducedImages, principal: { apiKeyId?: string | null }, reserved: number) => ({
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
