/**
 * The contract of media adapters (images, video, speech, music), beside the text contract in `../types.ts`.
 * Adapters speak one provider's wire format and nothing else: no wallet, no catalog, no storage. The pool hands them
 * one account's credential per attempt; failures are thrown as `UpstreamError`s classified with `classifyStatus`, so
 * the pool fails over exactly as it does for text.
 */
import type { UpstreamCredential } from '../types.js';

export type { UpstreamCredential } from '../types.js';

/** Video aspect ratios of the spec (`aspectRatio` of `POST /v1/ai/video`). */
export const VIDEO_ASPECT_RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4'] as const;
export type VideoAspectRatio = (typeof VIDEO_ASPECT_RATIOS)[number];

/** Bytes we hold, e.g. a source image the gateway already read (data: URL, our own file or a fetched https URL). */
export interface MediaFile {
  bytes: Buffer;
  mimeType: string;
}

/**
 * What an upstream handed back: the bytes themselves, or a URL to fetch them from (often expiring, sometimes carrying
 * credentials in its query). The gateway copies either into our storage (`fetchMediaOutput`), never links to it.
 */
export type MediaOutput = { kind: 'bytes'; bytes: Buffer; mimeType: string } | { kind: 'url'; url: string; mimeType: string | null };

export interface ImageRequest {
  /** The provider's own model name (the catalog's `upstreamModel`). */
  model: string;
  prompt: string;
  /** Null: none (the gateway supplies its default); adapters without a negative prompt ignore it. */
  negativePrompt: string | null;
  /** The requested pixels; adapters snap them to what the model accepts (see `sizes.ts`) and report what they used. */
  width: number;
  height: number;
  /** Images wanted; an adapter may deliver fewer per call (the gateway then tops up with further calls). */
  count: number;
  /**
   * Null: the provider picks. Deterministic adapters (local) derive image i of a call from `seed + i`, so a top-up
   * call must pass `seed + imagesDeliveredSoFar` to get new images rather than repeats.
   */
  seed: number | null;
  /** Image-to-image source. */
  initImage?: MediaFile;
  /** 0 keeps the source, 1 ignores it; null: the adapter's default. Ignored by adapters that lack it. */
  strength: number | null;
  /**
   * The quality to ask for, in the provider's own terms (GPT Image: low, medium, high, auto; DALL-E 3: standard), checked
   * against the model's `controls.quality` by the gateway; absent or null: none is sent.
   */
  quality?: string | null;
  signal?: AbortSignal;
}

/** Tokens an image call used, as a provider that bills images by tokens reports them (OpenAI's GPT Image). */
export interface ImageTokenUsage {
  /** Every input token: the text ones and the image ones below. */
  inputTokens: number;
  textInputTokens: number;
  imageInputTokens: number;
  outputTokens: number;
}

export interface ImageResult {
  images: MediaOutput[];
  /** Images actually returned by this call (`images.length`), possibly fewer than asked. */
  count: number;
  /** The most one call of this model returns, when the adapter knows it (e.g. DALL·E 3 makes one). */
  maxPerCall: number | null;
  /** The size actually made: the one the provider reports, else the one requested upstream after snapping. */
  width: number;
  height: number;
  /** The quality the provider reports it used (GPT Image answers `auto` with a concrete one); absent: not reported. */
  quality?: string | null;
  /** What the call used, when the provider bills by tokens and reports them; absent or null: not reported. */
  usage?: ImageTokenUsage | null;
}

export interface VideoRequest {
  model: string;
  prompt: string;
  durationSeconds: number;
  aspectRatio: VideoAspectRatio;
  /** Start frame. */
  seedImage?: MediaFile;
  /** End frame (first-last-frame video), for models that take one. */
  endImage?: MediaFile;
  negativePrompt: string | null;
  seed: number | null;
  /** Provider-specific keys merged into the upstream call; they never override the fields the adapter sets itself. */
  extra: Record<string, unknown>;
  signal?: AbortSignal;
}

export interface VideoSubmission {
  /** The provider's task id; enough on its own to poll (it survives restarts and works on any instance). */
  externalId: string;
  /** A rough wait before the result is ready. */
  estimatedSeconds: number;
  /** The clip length actually asked for upstream (a model with fixed durations takes the nearest one). */
  durationSeconds: number;
}

export type VideoStatus =
  | { status: 'QUEUED' | 'RUNNING'; progress: number | null }
  | { status: 'SUCCEEDED'; progress: 1; video: MediaOutput; durationSeconds: number | null }
  | { status: 'FAILED'; progress: number | null; error: { code: string; message: string } };

export interface SpeechRequest {
  model: string;
  text: string;
  /** The provider's voice name or id; null: the adapter's default voice. */
  voice: string | null;
  /** Speaking rate (1 = normal) for adapters that honour it. */
  speed?: number | null;
  extra?: Record<string, unknown>;
  signal?: AbortSignal;
}

export interface MusicRequest {
  model: string;
  /** What the track should sound like (genre, instruments, tempo); the model decides the length. */
  description: string;
  seed?: number | null;
  extra?: Record<string, unknown>;
  signal?: AbortSignal;
}

export interface AudioResult {
  bytes: Buffer;
  /** `audio/wav` for speech; music adapters say what they return. */
  mimeType: string;
  /** Length of the audio when the adapter can tell. */
  durationSeconds: number | null;
}

/** The kinds of call an adapter may take `extra` keys for. */
export type ExtraCallKind = 'video' | 'speech' | 'music';

/**
 * One key of a request's `extra` that an adapter sends upstream, and the values its provider takes there (checked
 * before anything is reserved). `object` values are sent as they are, so only keys whose provider price does not
 * depend on their content may be objects.
 */
export interface ExtraKey {
  type: 'enum' | 'number' | 'integer' | 'boolean' | 'string' | 'object';
  values?: readonly (string | number)[];
  min?: number;
  max?: number;
  /**
   * The provider bills differently per value: a value other than the model's default is taken only when the model's
   * catalog row prices it (`capabilities.extra.<key>.prices`), and the reservation and charge follow that price.
   */
  priced?: true;
}

export type ExtraKeys = Readonly<Record<string, ExtraKey>>;

/**
 * One media provider. Each capability is optional: an adapter implements what its API offers, and the gateway answers
 * 503 MODEL_UNAVAILABLE for a model whose adapter lacks the needed one (`mediaCapability` below).
 */
export interface MediaAdapter {
  /** `local`, `openai`, `runway`, `elevenlabs`. */
  readonly kind: string;
  /** Whether accounts of this adapter need an API key. */
  readonly needsCredential: boolean;
  generateImage?(credential: UpstreamCredential, request: ImageRequest): Promise<ImageResult>;
  submitVideo?(credential: UpstreamCredential, request: VideoRequest): Promise<VideoSubmission>;
  /** Where a submitted video stands. A task the provider no longer knows is reported FAILED (`not_found`), not thrown. */
  pollVideo?(credential: UpstreamCredential, externalId: string, signal?: AbortSignal): Promise<VideoStatus>;
  /**
   * Asks the provider to stop a submitted video. True only when it confirms the task stopped before it was billed; false
   * (or no method at all: the provider cannot stop tasks) means the provider charges the task.
   */
  cancelVideo?(credential: UpstreamCredential, externalId: string): Promise<boolean>;
  /** The `extra` keys each kind of call sends upstream; any other key is refused (400) before anything is reserved. */
  readonly extraKeys?: Readonly<Partial<Record<ExtraCallKind, ExtraKeys>>>;
  /** Speech as a WAV file. */
  generateSpeech?(credential: UpstreamCredential, request: SpeechRequest): Promise<AudioResult>;
  generateMusic?(credential: UpstreamCredential, request: MusicRequest): Promise<AudioResult>;
  /** A cheap authenticated call proving the credential works. Throws UpstreamError. */
  checkCredential(credential: UpstreamCredential): Promise<void>;
  /** For keys made of parts (Kling's access and secret key): throws an Error naming what is missing, at start-up. */
  checkKeyShape?(apiKey: string): void;
}

export type MediaCapability = 'generateImage' | 'submitVideo' | 'generateSpeech' | 'generateMusic';

/** The adapter's method for a capability, bound, or null when it has none. */
export function mediaCapability<K extends MediaCapability>(adapter: MediaAdapter, capability: K): NonNullable<MediaAdapter[K]> | null {
  const method = adapter[capability];
  return method ? (method.bind(adapter) as NonNullable<MediaAdapter[K]>) : null;
}
