import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

export const MODEL_TYPES = ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING', 'MULTIMODAL'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];
export const MODEL_STATUSES = ['ACTIVE', 'BETA', 'DISABLED'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];
/** `RETIRED` is internal: a retired model is never listed and answers 503 MODEL_UNAVAILABLE. */
export const MODEL_AVAILABILITIES = ['AVAILABLE', 'RETIRING', 'RETIRED'] as const;
export type ModelAvailability = (typeof MODEL_AVAILABILITIES)[number];
export const PROVIDER_STATUSES = ['ACTIVE', 'DEGRADED', 'INACTIVE', 'DISABLED'] as const;
export type ProviderStatus = (typeof PROVIDER_STATUSES)[number];
export const MODEL_FEATURES = [
  'TEXT',
  'VISION',
  'REASONING',
  'TOOLS',
  'IMAGE_GENERATION',
  'IMAGE_EDIT',
  'VIDEO_GENERATION',
  'TTS',
  'MUSIC',
  'STT',
  'EMBEDDING',
] as const;
export type ModelFeature = (typeof MODEL_FEATURES)[number];

/**
 * The unit keys a provider price (and a token rate) is quoted per. The token classes (`1m_cached_input_tokens`,
 * `1m_cache_write_tokens`, `1m_cache_write_1h_tokens`, `1m_reasoning_tokens`, and `1m_image_input_tokens` for the image
 * part of the input where a provider prices it apart from text, as GPT Image does) are optional: a class without its
 * own price is billed at the fresh input or output price, never free; a 1-hour cache write without its own price at
 * twice the fresh input price (Anthropic's multiplier, catalog/pricing.ts).
 */
export const PRICE_UNITS = [
  '1m_input_tokens',
  '1m_output_tokens',
  '1m_cached_input_tokens',
  '1m_cache_write_tokens',
  '1m_cache_write_1h_tokens',
  '1m_reasoning_tokens',
  '1m_image_input_tokens',
  'image',
  'second',
  'minute',
  '1k_chars',
  'generation',
] as const;
export type PriceUnit = (typeof PRICE_UNITS)[number];

/** Provider cost in minor units of `currency` per unit (fractions of a minor unit allowed, e.g. 7.5 cents per 1M tokens). */
export type ModelPricing = { currency: string; note?: string } & Partial<Record<PriceUnit, number>>;

/** A control descriptor of the Control schema; `null` in an override removes an inherited control. */
export interface ControlDescriptor {
  type: 'integer' | 'enum' | 'image' | 'string' | 'number' | 'object' | 'boolean';
  label?: string;
  values?: Array<string | number>;
  default?: unknown;
  min?: number;
  max?: number;
  step?: number;
  role?: string;
  /**
   * Provider prices of the values that cost other than the model's `pricing` (which is for the `default` value): per
   * value, the price units it changes, in the model's pricing currency. An `extra` key its adapter marks as priced
   * takes no other value but the default.
   */
  prices?: Record<string, Partial<Record<PriceUnit, number>>>;
}

/** A block of defaults or an override; an override may give part of a descriptor (merged over the inherited one). */
export interface CapabilityBlock {
  flags?: Record<string, unknown>;
  controls?: Record<string, Partial<ControlDescriptor> | null>;
  extra?: Record<string, Partial<ControlDescriptor> | null>;
  maxBatch?: number;
}

export const providers = pgTable(
  'providers',
  {
    id: idColumn(),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    status: text('status', { enum: PROVIDER_STATUSES }).notNull().default('INACTIVE'),
    /** Built into the service (the offline `local` provider). */
    builtIn: boolean('built_in').notNull().default(false),
    website: text('website'),
    /** Administrator overrides of the built-in capability defaults, per model type. */
    capabilityDefaults: jsonb('capability_defaults').$type<Partial<Record<string, CapabilityBlock>>>().notNull().default({}),
    /** Seed-owned rows are refreshed by the seed; an administrator's edit clears this flag. */
    seedManaged: boolean('seed_managed').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('providers_slug_key').on(t.slug)],
);

export const models = pgTable(
  'models',
  {
    id: idColumn(),
    slug: text('slug').notNull(),
    providerId: uuid('provider_id')
      .notNull()
      .references(() => providers.id),
    /** The provider's own name for the model, sent upstream. */
    upstreamModel: text('upstream_model').notNull(),
    displayName: text('display_name').notNull(),
    description: text('description'),
    type: text('type', { enum: MODEL_TYPES }).notNull(),
    status: text('status', { enum: MODEL_STATUSES }).notNull().default('ACTIVE'),
    availability: text('availability', { enum: MODEL_AVAILABILITIES }).notNull().default('AVAILABLE'),
    features: jsonb('features').$type<ModelFeature[]>().notNull().default([]),
    inputModalities: jsonb('input_modalities').$type<string[]>().notNull().default([]),
    outputModalities: jsonb('output_modalities').$type<string[]>().notNull().default([]),
    maxContextTokens: integer('max_context_tokens'),
    maxOutputTokens: integer('max_output_tokens'),
    /** Provider cost per unit; null means the model cannot be priced and is never served. */
    pricing: jsonb('pricing').$type<ModelPricing>(),
    /** Per-model capability override, deep-merged over the defaults (override wins). */
    capabilityOverride: jsonb('capability_override').$type<CapabilityBlock>().notNull().default({}),
    /** Images one upstream call delivered at most (recorded after an under-delivery). */
    maxBatch: integer('max_batch'),
    seedManaged: boolean('seed_managed').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('models_slug_key').on(t.slug),
    index('models_provider_idx').on(t.providerId),
    index('models_listing_idx')
      .on(t.type, t.slug)
      .where(sql`${t.status} <> 'DISABLED'`),
  ],
);
