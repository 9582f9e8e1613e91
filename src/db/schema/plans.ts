import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';
import { models } from './catalog.js';

export const PLAN_INTERVALS = ['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY', 'ENTERPRISE'] as const;
export type PlanInterval = (typeof PLAN_INTERVALS)[number];

/** Stored plan features; `modelAccess` is computed per request and never stored. */
export interface PlanFeatures {
  signupDefault?: boolean;
  apiAccess?: boolean;
  [key: string]: unknown;
}

export const plans = pgTable(
  'plans',
  {
    id: idColumn(),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    interval: text('interval', { enum: PLAN_INTERVALS }).notNull(),
    /** Minor units; 64-bit like every amount. */
    priceCents: bigint('price_cents', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    trialDays: integer('trial_days').notNull().default(0),
    /** Tokens added to the wallet each cycle (the plan's allowance). */
    tokenAllowance: bigint('token_allowance', { mode: 'number' }).notNull().default(0),
    limits: jsonb('limits').$type<Record<string, unknown>>().notNull().default({}),
    features: jsonb('features').$type<PlanFeatures>().notNull().default({}),
    /** true: the plan grants every model of the catalog; false: only the models in plan_models. */
    allModels: boolean('all_models').notNull().default(true),
    /** Payment channel slugs the plan may be bought with; empty means all. */
    allowedChannels: jsonb('allowed_channels').$type<string[]>().notNull().default([]),
    status: text('status', { enum: ['ACTIVE', 'ARCHIVED'] })
      .notNull()
      .default('ACTIVE'),
    /** Internal plans (the playground's) are never listed nor sold. */
    internal: boolean('internal').notNull().default(false),
    sortOrder: integer('sort_order').notNull().default(0),
    seedManaged: boolean('seed_managed').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('plans_slug_key').on(t.slug), index('plans_listing_idx').on(t.status, t.sortOrder)],
);

/** The allow-list of a plan that does not grant every model. */
export const planModels = pgTable(
  'plan_models',
  {
    planId: uuid('plan_id')
      .notNull()
      .references(() => plans.id, { onDelete: 'cascade' }),
    modelId: uuid('model_id')
      .notNull()
      .references(() => models.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.planId, t.modelId] }), index('plan_models_model_idx').on(t.modelId)],
);
