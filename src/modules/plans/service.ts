import { and, asc, eq, sql } from 'drizzle-orm';
import { planModels, plans } from '../../db/schema/plans.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createPort, type Connectable } from '../../platform/events/hooks.js';
import { notFound } from '../../platform/http/errors.js';
import type { CatalogService } from '../catalog/service.js';
import { createAccessMemo } from './access.js';
import { groupByKind, modelsOfPlan, planView } from './plan-view.js';
import { PLAYGROUND_PLAN_SLUG, seedPlans } from './seed.js';
import { createPlansSnapshots, type PlansSnapshot } from './snapshot.js';
import { createPlansAdmin } from './admin.js';

export type { PlanInput, PlanPatch, AdminPlanView } from './admin.js';
export { PLAN_INTERVALS } from '../../db/schema/plans.js';

export type PlanRow = typeof plans.$inferSelect;

export interface PlansServiceDeps {
  db: Db;
  clock: Clock;
  catalog: CatalogService;
  events?: EventBus;
  cacheTtlMs?: number;
}

/** The payment channel slugs live now: the payments module (built after this one) answers. */
export type LiveChannelSlugs = () => Promise<string[]>;

/** Plans (read side): the listing, model grants and features other modules check. */
export function createPlansService(deps: PlansServiceDeps) {
  const { db, clock, catalog, events } = deps;
  const ttlMs = deps.cacheTtlMs ?? 30_000;
  const { snapshot, invalidate, changed } = createPlansSnapshots({ db, events, ttlMs });
  const accessOf = createAccessMemo();

  const liveChannelsPort = createPort<LiveChannelSlugs>('plans.liveChannels', "connect the payments service's liveChannelSlugs");
  // None until connected (a plans service on its own: benchmarks, scripts).
  const liveChannels = async () => (await liveChannelsPort.current()?.()) ?? [];

  async function publicPlan(slug: string): Promise<{ plan: PlanRow; snap: PlansSnapshot }> {
    const snap = await snapshot();
    const plan = snap.bySlug.get(slug);
    if (!plan || plan.status !== 'ACTIVE' || plan.internal) throw notFound(`No plan "${slug}". See GET /v1/plans for the plans on sale.`);
    return { plan, snap };
  }

  return {
    /** Where `payableWith` and the admin's channel check learn which payment channels run now. */
    liveChannels: liveChannelsPort as Connectable<LiveChannelSlugs>,

    /** Operators' reads and changes (admin API): every plan, create, edit, archive; each change audited. */
    admin: createPlansAdmin({ db, clock, catalog, liveChannels, changed }),

    async seed(): Promise<{ seeded: boolean }> {
      const result = await seedPlans(db, clock.now());
      if (result.seeded) await changed();
      return result;
    },
    invalidate,

    /** Active public plans, sorted by sortOrder then price. */
    async list() {
      const [snap, cat, live] = await Promise.all([snapshot(), catalog.snapshot(), liveChannels()]);
      return Promise.all(snap.listed.map((plan) => planView(plan, snap, cat, live)));
    },

    /** A public plan by slug; 404 for unknown, archived and internal plans. */
    async getPublic(slug: string) {
      const { plan, snap } = await publicPlan(slug);
      const [cat, live] = await Promise.all([catalog.snapshot(), liveChannels()]);
      return planView(plan, snap, cat, live);
    },

    /** Every servable model the plan includes, grouped by kind with its token cost per unit. */
    async modelsOf(slug: string) {
      const { plan, snap } = await publicPlan(slug);
      const cat = await catalog.snapshot();
      const { servable } = modelsOfPlan(snap, cat, plan);
      return { plan: { id: plan.id, slug: plan.slug, name: plan.name }, tokensPerCredit: cat.settings.tokensPerCredit, groups: groupByKind(servable) };
    },

    async getById(planId: string): Promise<PlanRow | undefined> {
      return (await snapshot()).byId.get(planId);
    },

    async getBySlug(slug: string): Promise<PlanRow | undefined> {
      return (await snapshot()).bySlug.get(slug);
    },

    /**
     * The free plan every new account gets once (marked `features.signupDefault`), or null when none is active.
     * Reads through `dbOrTx`: it runs inside the sign-up transaction (the embedded database has one connection).
     */
    async signupDefault(dbOrTx: DbOrTx = db): Promise<PlanRow | null> {
      const [plan] = await dbOrTx
        .select()
        .from(plans)
        .where(and(eq(plans.status, 'ACTIVE'), sql`(${plans.features} ->> 'signupDefault')::boolean is true`))
        .orderBy(asc(plans.sortOrder), asc(plans.priceCents))
        .limit(1);
      return plan ?? null;
    },

    async playgroundPlan(): Promise<PlanRow | null> {
      return (await snapshot()).bySlug.get(PLAYGROUND_PLAN_SLUG) ?? null;
    },

    async isModelAllowed(planId: string, modelId: string): Promise<boolean> {
      return accessOf(await snapshot()).allowed(planId, modelId);
    },

    async featuresOf(planId: string): Promise<{ apiAccess: boolean; signupDefault: boolean }> {
      const plan = (await snapshot()).byId.get(planId);
      return { apiAccess: plan?.features.apiAccess === true, signupDefault: plan?.features.signupDefault === true };
    },

    /** `allowed` and `availableOn` answers for many models at once (one snapshot, memoised). */
    async access() {
      return accessOf(await snapshot());
    },

    /** Adds a model to a plan's allow-list (the playground plan gains each model on first use); idempotent. */
    async allowModel(planId: string, modelId: string, tx: DbOrTx = db): Promise<void> {
      const inserted = await tx.insert(planModels).values({ planId, modelId, createdAt: clock.now() }).onConflictDoNothing().returning();
      if (inserted.length > 0) await changed(tx === db ? undefined : tx);
    },

    async disallowModel(planId: string, modelId: string): Promise<void> {
      await db.delete(planModels).where(and(eq(planModels.planId, planId), eq(planModels.modelId, modelId)));
      await changed();
    },
  };
}

export type PlansService = ReturnType<typeof createPlansService>;
