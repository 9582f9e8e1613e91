import { Type } from 'typebox';
import { Nullable, StrictObject } from '../../../platform/http/schemas.js';
import { VIDEO_ASPECT_RATIOS } from '../providers/media/media-types.js';
import { MAX_PROMPT_CHARS } from './text.schemas.js';

/** Limits of the media request fields (spec A Limits: image count 1-8, strength 0-1). */
export const MAX_IMAGE_COUNT = 8;
export const MAX_IMAGE_SIDE = 4096;
export const MAX_SPEECH_CHARS = 5_000;
/** A media source URL; data: URLs carry the bytes inline (the 1 MB body limit applies), so they are long. */
const MAX_SOURCE_URL_CHARS = 1_400_000;

const ModelSlug = Type.String({ minLength: 1, maxLength: 200, description: 'A model slug from GET /v1/models' });
const Prompt = Type.String({ minLength: 1, maxLength: MAX_PROMPT_CHARS, pattern: '\\S' });
const SourceUrl = (description: string) => Type.String({ minLength: 1, maxLength: MAX_SOURCE_URL_CHARS, description });
const Seed = Type.Integer({ minimum: 0, maximum: 4_294_967_295, description: 'For reproducible results' });
const NegativePrompt = Type.String({ maxLength: MAX_PROMPT_CHARS, description: 'Omitted: a short default; "" for none' });
const Extra = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
  description:
    "Provider-specific keys sent upstream: only those listed in the model's capabilities.extra, with values that fit them (anything else is a 400 before any charge); a priced option (e.g. a MiniMax resolution) changes the price",
  maxProperties: 50,
});
const JobId = Type.String({ minLength: 1, maxLength: 64, description: 'One of your finished video jobs' });

/** Every quality name OpenAI's image models take; which a model takes is its `controls.quality` (image.ts). */
export const IMAGE_QUALITIES = ['auto', 'low', 'medium', 'high', 'standard', 'hd'] as const;
const ImageQuality = Type.Enum([...IMAGE_QUALITIES], {
  description:
    "Extension. Values come from the model's controls.quality (GPT Image: low, medium, high or auto, the default, where the model chooses and the call reserves the price of high; DALL-E 3: standard). auto is taken by every model; any other value a model does not list is a 400. Token-billed models charge the quality the provider reports it used",
});

export const ImageBody = StrictObject({
  model: ModelSlug,
  prompt: Prompt,
  negativePrompt: Type.Optional(NegativePrompt),
  width: Type.Optional(Type.Integer({ minimum: 16, maximum: MAX_IMAGE_SIDE, description: "Snapped to the model's nearest accepted size" })),
  height: Type.Optional(Type.Integer({ minimum: 16, maximum: MAX_IMAGE_SIDE })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_IMAGE_COUNT, default: 1, description: 'Charged for the images actually delivered' })),
  seed: Type.Optional(Seed),
  initImageUrl: Type.Optional(SourceUrl('Image-to-image source: a data: URL, an https URL or a /v1/files/raw/<key> URL')),
  strength: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: '0 keeps the source, 1 ignores it' })),
  quality: Type.Optional(ImageQuality),
  async: Type.Optional(Type.Boolean({ description: 'Answer at once with a job; credit failures then arrive on the job (FAILED / QUOTA_EXCEEDED)' })),
});

const ImageItem = Type.Object({ url: Type.String(), mimeType: Type.String() });

/** What a token-billed image model (GPT Image) charged for; absent for models priced per image. */
const ImageTokenUsage = {
  quality: Type.Optional(Type.String({ description: 'Token-billed models: the quality the provider used (auto resolved to the one it chose)' })),
  size: Type.Optional(Type.String({ description: 'Token-billed models: WIDTHxHEIGHT the provider made' })),
  inputTokens: Type.Optional(Type.Integer({ description: 'Token-billed models: prompt text and source image tokens' })),
  inputTokensDetails: Type.Optional(Type.Object({ textTokens: Type.Integer(), imageTokens: Type.Integer() })),
  outputTokens: Type.Optional(Type.Integer({ description: 'Token-billed models: image tokens of the images delivered' })),
  totalTokens: Type.Optional(Type.Integer()),
};

export const ImageResponse = Type.Object({
  images: Type.Array(ImageItem),
  usage: Type.Object({
    imagesGenerated: Type.Integer(),
    imagesRequested: Type.Integer(),
    creditsConsumed: Type.Integer({ description: 'Tokens charged to the wallet' }),
    ...ImageTokenUsage,
  }),
  model: Type.String(),
  requestId: Type.String(),
  width: Type.Integer({ description: 'Pixels actually made (after snapping)' }),
  height: Type.Integer(),
});

export const ImageJobResponse = Type.Object({ jobId: Type.String(), status: Type.Literal('QUEUED') });

/** `image.sync` or `job`: one of the two shapes, by `async`. */
export const ImageOrJobResponse = Type.Union([ImageResponse, ImageJobResponse]);

export const VideoBody = StrictObject({
  model: ModelSlug,
  prompt: Prompt,
  durationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 120, description: "Allowed values come from the model's controls" })),
  aspectRatio: Type.Optional(Type.Enum([...VIDEO_ASPECT_RATIOS])),
  seedImageUrl: Type.Optional(SourceUrl('Start frame: data:, https or /v1/files/raw/<key> URL')),
  endImageUrl: Type.Optional(SourceUrl('End frame (first-last-frame video)')),
  negativePrompt: Type.Optional(NegativePrompt),
  seed: Type.Optional(Seed),
  extra: Type.Optional(Extra),
});

export const LipSyncBody = StrictObject({
  model: ModelSlug,
  videoUrl: Type.Optional(SourceUrl('The video to lip-sync (or jobId)')),
  jobId: Type.Optional(JobId),
  audioUrl: Type.Optional(SourceUrl('What to say, as audio (or text)')),
  text: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_SPEECH_CHARS, pattern: '\\S', description: 'What to say, spoken by the provider (or audioUrl)' }),
  ),
  voice: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});

export const ExtendBody = StrictObject({
  model: ModelSlug,
  jobId: Type.Optional(JobId),
  videoUrl: Type.Optional(SourceUrl('The video to extend (or jobId)')),
  prompt: Type.Optional(Prompt),
  durationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 120 })),
});

export const VideoJobResponse = Type.Object({
  jobId: Type.String(),
  status: Type.Literal('QUEUED'),
  creditsReserved: Type.Integer({ description: 'Tokens held now: the price of the job, fixed at submit' }),
});

export const AudioBody = StrictObject({
  model: ModelSlug,
  text: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_SPEECH_CHARS, pattern: '\\S', description: 'Speech models: the words to say' })),
  description: Type.Optional(Type.String({ minLength: 1, maxLength: 2_000, pattern: '\\S', description: 'Music models: genre, instruments, tempo' })),
  voice: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Speech only; values from the model's controls" })),
  speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4, description: 'Speech only, where the model honours it' })),
  durationSeconds: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 600, description: 'Not taken: music models decide the length, speech lasts as long as its text' }),
  ),
  seed: Type.Optional(Seed),
  extra: Type.Optional(Extra),
});

export const AudioResponse = Type.Object({
  audio: Type.Object({ url: Type.String(), mimeType: Type.String({ description: 'audio/wav for speech' }), durationSeconds: Nullable(Type.Number()) }),
  usage: Type.Object({ characters: Nullable(Type.Integer()), durationSeconds: Nullable(Type.Number()), creditsConsumed: Type.Integer() }),
  model: Type.String(),
  requestId: Type.String(),
});

export const EnhanceImageBody = StrictObject({
  model: ModelSlug,
  imageUrl: SourceUrl('A data: URL, a /v1/files/raw/<key> URL or a plain https URL (read within 8 s and 15 MB)'),
  instruction: Type.Optional(Type.String({ minLength: 1, maxLength: 2_000, pattern: '\\S' })),
});
