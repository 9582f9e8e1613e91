import { createHash } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { plans, type PlanFeatures, type PlanInterval } from '../../db/schema/plans.js';
import { settings } from '../../db/schema/settings.js';
import type { Db } from '../../platform/db/database.js';

export interface SeedPlan {
  slug: string;
  name: string;
  description: string;
  interval: PlanInterval;
  priceCents: number;
  currency: string;
  trialDays: number;
  tokenAllowance: number;
  limits: Record<string, unknown>;
  features: PlanFeatures;
  allModels: boolean;
  allowedChannels: string[];
  internal: boolean;
  sortOrder: number;
}

export const PLAYGROUND_PLAN_SLUG = 'internal-playground';

/**
 * Plans differ by allowance and limits, not by models: every public plan grants the whole catalog.
 * Prices are in poisha (BDT minor units); allowances in tokens (10,000 tokens = 1 credit).
 */
export const SEED_PLANS: SeedPlan[] = [
  {
    slug: 'free',
    name: 'Free',
    description: 'Try every model with a one-time allowance of 100 credits. Pay as you go with top-ups.',
    interval: 'MONTHLY',
    priceCents: 0,
    currency: 'BDT',
    trialDays: 0,
    tokenAllowance: 1_000_000,
    limits: { dailyRequests: 50, monthlyRequests: 500, storageMb: 500, concurrentJobs: 1 },
    features: { signupDefault: true, apiAccess: false },
    allModels: true,
    allowedChannels: [],
    internal: false,
    sortOrder: 0,
  },
  {
    slug: 'starter',
    name: 'Starter',
    description: '1,000 credits every month for regular creators, with API access.',
    interval: 'MONTHLY',
    priceCents: 49_900,
    currency: 'BDT',
    trialDays: 0,
    tokenAllowance: 10_000_000,
    limits: { dailyRequests: 500, monthlyRequests: 10_000, storageMb: 5_000, concurrentJobs: 2 },
    features: { apiAccess: true },
    allModels: true,
    allowedChannels: [],
    internal: false,
    sortOrder: 10,
  },
  {
    slug: 'pro',
    name: 'Pro',
    description: '3,500 credits every month, higher limits and API access.',
    interval: 'MONTHLY',
    priceCents: 149_900,
    currency: 'BDT',
    trialDays: 3,
    tokenAllowance: 35_000_000,
    limits: { dailyRequests: 2_000, monthlyRequests: 50_000, storageMb: 20_000, concurrentJobs: 4 },
    features: { apiAccess: true },
    allModels: true,
    allowedChannels: [],
    internal: false,
    sortOrder: 20,
  },
  {
    slug: 'studio',
    name: 'Studio',
    description: '12,000 credits every month for teams and heavy video work, with API access.',
    interval: 'MONTHLY',
    priceCents: 499_900,
    currency: 'BDT',
    trialDays: 0,
    tokenAllowance: 120_000_000,
    limits: { dailyRequests: 10_000, monthlyRequests: 250_000, storageMb: 100_000, concurrentJobs: 8 },
    features: { apiAccess: true },
    allModels: true,
    allowedChannels: [],
    internal: false,
    sortOrder: 30,
  },
  {
    slug: PLAYGROUND_PLAN_SLUG,
    name: 'Internal playground',
    description: 'Unlimited internal plan of the admin playground; models join its allow-list on first use.',
    interval: 'ENTERPRISE',
    priceCents: 0,
    currency: 'BDT',
    trialDays: 0,
    tokenAllowance: 0,
    limits: { unlimited: true },
    features: { apiAccess: false, playground: true },
    allModels: false,
    allowedChannels: [],
    internal: true,
    sortOrder: 1000,
  },
];

const SEED_KEY = 'seed.plans';
const digest = createHash('sha256').update(JSON.stringify(SEED_PLANS)).digest('hex');
const excluded = (column: string) => sql.raw(`excluded.${column}`);

/** Upserts the seeded plans by slug; plans an administrator edited (`seed_managed = false`) are left alone. */
export async function seedPlans(db: Db, now: Date): Promise<{ seeded: boolean }> {
  const [done] = await db.select({ value: settings.value }).from(settings).where(eq(settings.key, SEED_KEY));
  if (done?.value.digest === digest) return { seeded: false };
  await db.transaction(async (tx) => {
    await tx
      .insert(plans)
      .values(SEED_PLANS.map((p) => ({ ...p, createdAt: now, updatedAt: now })))
      .onConflictDoUpdate({
        target: plans.slug,
        set: {
          name: excluded('name'),
          description: excluded('description'),
          interval: excluded('interval'),
          priceCents: excluded('price_cents'),
          currency: excluded('currency'),
          trialDays: excluded('trial_days'),
          tokenAllowance: excluded('token_allowance'),
          limits: excluded('limits'),
          features: excluded('features'),
          allModels: excluded('all_models'),
          allowedChannels: excluded('allowed_channels'),
          internal: excluded('internal'),
          sortOrder: excluded('sort_order'),
          updatedAt: now,
        },
        setWhere: eq(plans.seedManaged, true),
      });
    await tx
      .insert(settings)
      .values({ key: SEED_KEY, value: { digest }, updatedAt: now })
      .onConflictDoUpdate({ target: settings.key, set: { value: { digest }, updatedAt: now } });
  });
  return { seeded: true };
}
