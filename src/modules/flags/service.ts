import { createHash } from 'node:crypto';
import { asc, eq } from 'drizzle-orm';
import { featureFlags } from '../../db/schema/flags.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import type { AuditActor, AuditService } from '../audit/service.js';

export type FlagRow = typeof featureFlags.$inferSelect;

export interface FlagTargeting {
  everyone: boolean;
  userIds: string[];
  plans: string[];
  percentage: number;
}

export interface NewFlag {
  key: string;
  description?: string;
  enabled?: boolean;
  targeting?: Partial<FlagTargeting>;
}

export type FlagChanges = Partial<Omit<NewFlag, 'key'>>;

export interface FlagsServiceDeps {
  db: Db;
  clock: Clock;
  audit: Pick<AuditService, 'record'>;
  /** The slug of the plan the user meters against, or null (the subscriptions module answers). */
  planOf: (userId: string) => Promise<string | null>;
  /** Whether a plan with this slug exists (targeting may name only real plans). */
  planExists: (slug: string) => Promise<boolean>;
  /** Cross-instance invalidation: a trigger announces every write to the flags table. */
  events?: EventBus;
}

const ALL = 'all';

/** The viewer's bucket for a flag, 0-9999: stable per user and independent between flags. */
export function rolloutBucket(flagKey: string, userId: string): number {
  return createHash('sha256').update(`${flagKey}:${userId}`).digest().readUInt32BE(0) % 10_000;
}

/**
 * The flag's value for a viewer (null: anonymous). Off when the flag is disabled; on for everyone when `everyone`;
 * otherwise on for listed users, viewers on a listed plan and the first `percentage` % of users by their bucket.
 * Anonymous viewers are picked out by `everyone` alone. `planOf` is asked only when a plan rule could decide.
 */
export async function evaluateFlag(flag: FlagRow, viewer: { userId: string } | null, planOf: () => Promise<string | null>): Promise<boolean> {
  if (!flag.enabled) return false;
  if (flag.everyone) return true;
  if (!viewer) return false;
  if (flag.userIds.includes(viewer.userId)) return true;
  if (flag.percentage > 0 && rolloutBucket(flag.key, viewer.userId) < flag.percentage * 100) return true;
  if (flag.plans.length === 0) return false;
  const plan = await planOf();
  return plan !== null && flag.plans.includes(plan);
}

export const toFlagView = (f: FlagRow) => ({
  id: f.id,
  key: f.key,
  description: f.description,
  enabled: f.enabled,
  targeting: { everyone: f.everyone, userIds: f.userIds, plans: f.plans, percentage: f.percentage },
  createdAt: f.createdAt.toISOString(),
  updatedAt: f.updatedAt.toISOString(),
});

export type FlagView = ReturnType<typeof toFlagView>;

/** Feature flags: evaluated per viewer from an in-process copy of the whole (small) table, dropped on every write. */
export function createFlagsService(deps: FlagsServiceDeps) {
  const { db, clock, audit } = deps;
  const cache = createInvalidatingCache<FlagRow[]>({
    name: 'feature_flags',
    bus: deps.events,
    load: async () => db.select().from(featureFlags).orderBy(asc(featureFlags.key)),
  });

  async function checkPlans(plans: string[] | undefined): Promise<void> {
    for (const slug of plans ?? []) {
      if (!(await deps.planExists(slug)))
        throw badRequest(`There is no plan "${slug}". Name plans by their slug, as GET /v1/plans lists them.`, { field: 'targeting.plans' });
    }
  }

  async function find(key: string): Promise<FlagRow> {
    const [row] = await db.select().from(featureFlags).where(eq(featureFlags.key, key));
    if (!row) throw notFound(`There is no feature flag "${key}".`);
    return row;
  }

  const targetingColumns = (t: Partial<FlagTargeting> | undefined) => ({
    ...(t?.everyone !== undefined ? { everyone: t.everyone } : {}),
    ...(t?.userIds !== undefined ? { userIds: [...new Set(t.userIds)] } : {}),
    ...(t?.plans !== undefined ? { plans: [...new Set(t.plans)] } : {}),
    ...(t?.percentage !== undefined ? { percentage: t.percentage } : {}),
  });

  /** Runs an audited change; this instance drops its copy once it commits (the trigger tells the others). */
  async function change<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await db.transaction(work);
    } finally {
      cache.forget(ALL);
    }
  }

  return {
    /** Every flag's value for the viewer (null: anonymous), by key. */
    async evaluate(viewer: { userId: string } | null): Promise<Record<string, boolean>> {
      const flags = await cache.get(ALL);
      let plan: Promise<string | null> | undefined;
      const planOf = () => (plan ??= viewer ? deps.planOf(viewer.userId) : Promise.resolve(null));
      const values: Record<string, boolean> = {};
      for (const flag of flags) values[flag.key] = await evaluateFlag(flag, viewer, planOf);
      return values;
    },

    /** All flags, by key (the set is small: no paging). */
    async list(): Promise<FlagView[]> {
      return (await cache.get(ALL)).map(toFlagView);
    },

    async get(key: string): Promise<FlagView> {
      return toFlagView(await find(key));
    },

    async create(actor: AuditActor, input: NewFlag): Promise<FlagView> {
      await checkPlans(input.targeting?.plans);
      const now = clock.now();
      return change(async (tx) => {
        const [row] = await tx
          .insert(featureFlags)
          .values({
            key: input.key,
            description: input.description ?? '',
            enabled: input.enabled ?? false,
            ...targetingColumns(input.targeting),
            createdAt: now,
            updatedAt: now,
          })
          .onConflictDoNothing()
          .returning();
        if (!row) throw conflict(`A feature flag "${input.key}" exists already. Change it with PATCH /v1/admin/flags/${input.key}.`, { field: 'key' });
        const view = toFlagView(row);
        await audit.record(actor, { action: 'flag.create', targetType: 'flag', targetId: row.key, before: null, after: view }, tx);
        return view;
      });
    },

    async update(actor: AuditActor, key: string, changes: FlagChanges): Promise<FlagView> {
      await checkPlans(changes.targeting?.plans);
      return change(async (tx) => {
        const [before] = await tx.select().from(featureFlags).where(eq(featureFlags.key, key)).for('update');
        if (!before) throw notFound(`There is no feature flag "${key}".`);
        const [row] = await tx
          .update(featureFlags)
          .set({
            ...(changes.description !== undefined ? { description: changes.description } : {}),
            ...(changes.enabled !== undefined ? { enabled: changes.enabled } : {}),
            ...targetingColumns(changes.targeting),
            updatedAt: clock.now(),
          })
          .where(eq(featureFlags.id, before.id))
          .returning();
        const view = toFlagView(row!);
        await audit.record(actor, { action: 'flag.update', targetType: 'flag', targetId: key, before: toFlagView(before), after: view }, tx);
        return view;
      });
    },

    async remove(actor: AuditActor, key: string): Promise<void> {
      await change(async (tx) => {
        const [removed] = await tx.delete(featureFlags).where(eq(featureFlags.key, key)).returning();
        if (!removed) throw notFound(`There is no feature flag "${key}".`);
        await audit.record(actor, { action: 'flag.delete', targetType: 'flag', targetId: key, before: toFlagView(removed), after: null }, tx);
      });
    },
  };
}

export type FlagsService = ReturnType<typeof createFlagsService>;
