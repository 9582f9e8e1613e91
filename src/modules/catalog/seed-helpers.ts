/** Builders for the seeded catalog's entries. */
import type { CapabilityBlock, ModelAvailability, ModelFeature, ModelPricing, ModelStatus, ModelType } from '../../db/schema/catalog.js';

export interface SeedProvider {
  slug: string;
  name: string;
  website: string | null;
  builtIn?: boolean;
}

export interface SeedModel {
  provider: string;
  /** The part after `<provider>/` in the slug. */
  name: string;
  upstreamModel?: string;
  displayName: string;
  description: string;
  type: ModelType;
  status?: ModelStatus;
  availability?: ModelAvailability;
  features: ModelFeature[];
  inputModalities: string[];
  outputModalities: string[];
  maxContextTokens?: number | null;
  maxOutputTokens?: number | null;
  pricing: ModelPricing;
  capabilityOverride?: CapabilityBlock;
  maxBatch?: number | null;
}

const TEXT_IO = { inputModalities: ['text'], outputModalities: ['text'] };
const VISION_IO = { inputModalities: ['text', 'image'], outputModalities: ['text'] };
export const USD_NOTE = 'Provider list price in US cents (reference only; customers pay in tokens)';

export interface ChatSpec {
  upstream?: string;
  in: number;
  out: number;
  /** Cached input and cache writes per 1M tokens, where the provider publishes them. */
  cached?: number;
  cacheWrite?: number;
  /** 1-hour cache writes per 1M tokens (Anthropic's `ttl: "1h"`), where the provider prices them apart. */
  cacheWrite1h?: number;
  ctx: number;
  maxOut: number;
  vision?: boolean;
  reasoning?: boolean;
  tools?: boolean;
  description: string;
  availability?: ModelAvailability;
  status?: ModelStatus;
  override?: CapabilityBlock;
}

/** A chat model priced per 1M input and output tokens (US cents). */
export function chat(provider: string, name: string, displayName: string, spec: ChatSpec): SeedModel {
  const features: ModelFeature[] = ['TEXT'];
  if (spec.vision) features.push('VISION');
  if (spec.reasoning) features.push('REASONING');
  if (spec.tools !== false) features.push('TOOLS');
  return {
    provider,
    name,
    upstreamModel: spec.upstream ?? name,
    displayName,
    description: spec.description,
    type: spec.vision ? 'MULTIMODAL' : 'TEXT',
    status: spec.status,
    availability: spec.availability,
    features,
    ...(spec.vision ? VISION_IO : TEXT_IO),
    maxContextTokens: spec.ctx,
    maxOutputTokens: spec.maxOut,
    pricing: {
      currency: 'USD',
      note: USD_NOTE,
      '1m_input_tokens': spec.in,
      '1m_output_tokens': spec.out,
      ...(spec.cached === undefined ? {} : { '1m_cached_input_tokens': spec.cached }),
      ...(spec.cacheWrite === undefined ? {} : { '1m_cache_write_tokens': spec.cacheWrite }),
      ...(spec.cacheWrite1h === undefined ? {} : { '1m_cache_write_1h_tokens': spec.cacheWrite1h }),
    },
    capabilityOverride: spec.override,
  };
}

export function embedding(provider: string, name: string, displayName: string, perMillion: number, ctx: number, description: string): SeedModel {
  return {
    provider,
    name,
    displayName,
    description,
    type: 'EMBEDDING',
    features: ['EMBEDDING'],
    inputModalities: ['text'],
    outputModalities: ['embedding'],
    maxContextTokens: ctx,
    maxOutputTokens: null,
    pricing: { currency: 'USD', note: USD_NOTE, '1m_input_tokens': perMillion },
  };
}

/**
 * Per-1M-token prices (US cents) of an image model billed by tokens (`image-tokens.ts`): prompt text, source images,
 * output images. Its `perImage` price then only stands for the rate clients show (`rates.image`).
 */
export interface ImageTokenPrices {
  textIn: number;
  imageIn: number;
  imageOut: number;
}

export function image(
  provider: string,
  name: string,
  displayName: string,
  perImage: number,
  description: string,
  options: { upstream?: string; edit?: boolean; maxBatch?: number; override?: CapabilityBlock; tokens?: ImageTokenPrices } = {},
): SeedModel {
  const tokens = options.tokens;
  return {
    provider,
    name,
    upstreamModel: options.upstream ?? name,
    displayName,
    description,
    type: 'IMAGE',
    features: options.edit ? ['IMAGE_GENERATION', 'IMAGE_EDIT'] : ['IMAGE_GENERATION'],
    inputModalities: options.edit ? ['text', 'image'] : ['text'],
    outputModalities: ['image'],
    pricing: {
      currency: 'USD',
      note: USD_NOTE,
      image: perImage,
      ...(tokens ? { '1m_input_tokens': tokens.textIn, '1m_image_input_tokens': tokens.imageIn, '1m_output_tokens': tokens.imageOut } : {}),
    },
    capabilityOverride: options.override,
    maxBatch: options.maxBatch ?? null,
  };
}

/**
 * A model its provider shut down, kept in the seed so its slug answers 503 MODEL_UNAVAILABLE naming the model to use
 * instead (`flags.replacedBy`, read by the catalog snapshot) rather than 404 as if it had never existed. The seed's
 * upgrade refresh writes the availability, so installs that sold the model stop selling it.
 */
export function retired(model: SeedModel, replacedBy: string): SeedModel {
  const override = model.capabilityOverride ?? {};
  return { ...model, availability: 'RETIRED', capabilityOverride: { ...override, flags: { ...override.flags, replacedBy } } };
}

export function video(
  provider: string,
  name: string,
  displayName: string,
  perSecond: number,
  description: string,
  options: { upstream?: string; override?: CapabilityBlock; status?: ModelStatus } = {},
): SeedModel {
  return {
    provider,
    name,
    upstreamModel: options.upstream ?? name,
    displayName,
    description,
    type: 'VIDEO',
    status: options.status,
    features: ['VIDEO_GENERATION'],
    inputModalities: ['text', 'image'],
    outputModalities: ['video'],
    pricing: { currency: 'USD', note: USD_NOTE, second: perSecond },
    capabilityOverride: options.override,
  };
}

export function speech(
  provider: string,
  name: string,
  displayName: string,
  price: { '1k_chars'?: number; minute?: number },
  description: string,
  options: { upstream?: string; status?: ModelStatus } = {},
): SeedModel {
  return {
    provider,
    name,
    upstreamModel: options.upstream ?? name,
    displayName,
    description,
    type: 'AUDIO',
    status: options.status,
    features: ['TTS'],
    inputModalities: ['text'],
    outputModalities: ['audio'],
    pricing: { currency: 'USD', note: USD_NOTE, ...price },
  };
}
