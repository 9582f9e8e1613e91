import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const GENERATION_KINDS = ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO'] as const;
export type GenerationKind = (typeof GENERATION_KINDS)[number];
export const GENERATION_VISIBILITIES = ['PRIVATE', 'UNLISTED', 'PUBLIC'] as const;
export type GenerationVisibility = (typeof GENERATION_VISIBILITIES)[number];

/** A library item (spec A "Generation"): TEXT `{ text }`, IMAGE `{ images }`, VIDEO `{ videos }`, AUDIO `{ audio }`. */
export const generations = pgTable(
  'generations',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: GENERATION_KINDS }).notNull(),
    prompt: text('prompt').notNull(),
    thumbnailUrl: text('thumbnail_url'),
    output: jsonb('output').$type<Record<string, unknown>>().notNull(),
    modelId: uuid('model_id'),
    visibility: text('visibility', { enum: GENERATION_VISIBILITIES }).notNull().default('PRIVATE'),
    tags: text('tags')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    favorite: boolean('favorite').notNull().default(false),
    /** The gateway request that produced it (one item per request). */
    requestId: text('request_id'),
    createdAt: createdAt(),
  },
  (t) => [
    index('generations_user_kind_idx').on(t.userId, t.kind, t.createdAt, t.id),
    // The default listing (every media kind, newest first) walks this one.
    index('generations_user_created_idx').on(t.userId, t.createdAt, t.id),
    uniqueIndex('generations_request_key').on(t.requestId),
  ],
);

export const PROMPT_VARIABLE_TYPES = ['string', 'number', 'select'] as const;
export type PromptVariableType = (typeof PROMPT_VARIABLE_TYPES)[number];

/** A fill-in field of a prompt template, written `{{name}}` in its body. */
export interface PromptVariable {
  name: string;
  label: string;
  type: PromptVariableType;
  /** The choices of a `select` variable. */
  options?: string[];
}

/** A saved prompt template (spec A "Saved prompt template"); system templates have no owner and are shared with all users. */
export const promptTemplates = pgTable(
  'prompt_templates',
  {
    id: idColumn(),
    /** The owner; null for a system template. */
    userId: uuid('user_id').references(() => users.id),
    /** The seed's stable key of a system template (so seeding is idempotent); null for users' own templates. */
    systemKey: text('system_key'),
    kind: text('kind', { enum: GENERATION_KINDS }).notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    variables: jsonb('variables').$type<PromptVariable[]>().notNull().default([]),
    tags: text('tags')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    usageCount: integer('usage_count').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('prompt_templates_system_key').on(t.systemKey), index('prompt_templates_user_idx').on(t.userId, t.updatedAt)],
);
