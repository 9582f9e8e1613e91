import type { PriceOptions } from '../../catalog/service.js';
import type { MediaGatewayDeps } from './common.js';
import type { MediaFile, VideoAspectRatio } from '../providers/media/media-types.js';

// What the video routes (video.ts) and the video job (video-job.ts) share: the job's stored input and its lease.

/** A running job's reservation lease, renewed on every poll, so the crash sweeper never takes a live job. */
export const JOB_LEASE_SECONDS = 2 * 60 * 60;

export type VideoOp = {
  prompt: string;
  durationSeconds: number;
  aspectRatio: VideoAspectRatio;
} & (
  | {
      op: 'generate';
      negativePrompt: string | null;
      seed: number | null;
      seedImageUrl: string | null;
      endImageUrl: string | null;
      extra: Record<string, unknown>;
      /** The price units the priced options of `extra` changed (null or absent: the model's own prices). */
      priceOptions?: PriceOptions | null;
    }
  | { op: 'lipSync'; videoUrl: string; audioUrl: string | null; text: string | null; voice: string | null }
  | { op: 'extend'; videoUrl: string }
);

/** The input a video job stores: the operation, whose wallet pays, and what its usage record names. */
export type VideoInput = VideoOp & { owner: { userId: string } | { workspaceId: string }; providerId: string | null; apiKeyId: string | null };

/** The price units a job's options changed, for pricing what it costs the provider. */
export const priceOptionsOf = (input: VideoOp): PriceOptions | undefined => (input.op === 'generate' ? (input.priceOptions ?? undefined) : undefined);

/** A media file of ours (kept at submit) read back for the provider. */
export async function readStoredMedia(deps: Pick<MediaGatewayDeps, 'files'>, url: string, accept: 'image' | 'audio' | 'video'): Promise<MediaFile> {
  const source = await deps.files.readSource(url, { accept: [accept], what: `the stored ${accept}`, maxBytes: 200 * 1024 * 1024 });
  return { bytes: source.bytes, mimeType: source.contentType };
}
