import { and, asc, eq, sql } from 'drizzle-orm';
import type { ModelType, PriceUnit } from '../../db/schema/catalog.js';
import { planModels, plans } from '../../db/schema/plans.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { notFound } from '../../platform/http/errors.js';
import type { CatalogService, CatalogSnapshot, ModelEntry } from '../catalog/service.js';
import { PLAYGROUND_PLAN_SLUG, seedPlans } from './seed.js';
import { createPlansAdmin } from './admin.js';

export type { PlanInput, PlanPatch, AdminPlanView } from './admin.js';
export { PLAN_INTERVALS } from '../../db/schema/plans.js';

export type PlanRow = typeof plans.$inferSelect;

export interface PlanRef {
  slug: string;
  name: string;
  priceCents: number;
}

export interface ModelAccessItem {
  id: string;
  slug: string;
  displayName: string;
  provider: { slug: string; name: string };
  unit: PriceUnit | null;
  tokensPerUnit: number | null;
}

export interface ModelAccessGroup {
  kind: ModelType;
  count: number;
  models: ModelAccessItem[];
}

interface PlansSnapshot {
  all: PlanRow[];
  byId: Map<string, PlanRow>;
  bySlug: Map<string, PlanRow>;
  /** Allow-lists of the plans that do not grant every model. */
  lists: Map<string, Set<string>>;
  /** Listed plans: active, not internal; ordered by sortOrder then price. */
  listed: PlanRow[];
}

export interface PlansServiceDeps {
  db: Db;
  clock: Clock;
  catalog: CatalogService;
  events?: EventBus;
  /** Payment channel slugs live now (the payments module provides them); none until it exists. */
  liveChannels?: () => Promise<string[]>;
  cacheTtlMs?: number;
}

const TYPE_ORDER: ModelType[] = ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING', 'MULTIMODAL'];
const PRIMARY_UNITS: Record<ModelType, PriceUnit[]> = {
  TEXT: ['1m_output_tokens', '1m_input_tokens'],
  MULTIMODAL: ['1m_output_tokens', '1m_input_tokens'],
  EMBEDDING: ['1m_input_tokens'],
  IMAGE: ['image', 'generation'],
  VIDEO: ['second', 'generation', 'minute'],
  AUDIO: ['1k_chars', 'minute', 'generation', 'second'],
};
const CHANGED_CHANNEL = 'plans_changed';

/** The unit a model is mainly billed by and its token price (what plan model lists show). */
export function primaryRate(entry: ModelEntry): { unit: PriceUnit | null; tokensPerUnit: number | null } {
  for (const unit of PRIMARY_UNITS[entry.row.type]) {
    const tokens = entry.rates[unit];
    if (tokens !== undefined) return { unit, tokensPerUnit: tokens };
  }
  return { unit: null, tokensPerUnit: null };
}

export function groupByKind(entries: ModelEntry[]): ModelAccessGroup[] {
  const groups = new Map<ModelType, ModelAccessItem[]>();
  for (const entry of entries) {
    const items = groups.get(entry.row.type) ?? [];
    items.push({
      id: entry.row.id,
      slug: entry.row.slug,
      displayName: entry.row.displayName,
      provider: { slug: entry.provider.slug, name: entry.provider.name },
      ...primaryRate(entry),
    });
    groups.set(entry.row.type, items);
  }
  return TYPE_ORDER.filter((kind) => groups.has(kind)).map((kind) => ({ kind, count: groups.get(kind)!.length, models: groups.get(kind)! }));
}

/** Plans (read side): the listing, model grants and features other modules check. */
export function createPlansService(deps: PlansServiceDeps) {
  const { db, clock, catalog, events } = deps;
  const ttlMs = deps.cacheTtlMs ?? 30_000;
  let cached: { snapshot: PlansSnapshot; at: number } | null = null;
  let generation = 0;
  let subscribed = false;

  const invalidate = () => {
    generation++;
    cached = null;
  };

  async function snapshot(): Promise<PlansSnapshot> {
    if (cached && performance.now() - cached.at < ttlMs) return cached.snapshot;
    if (!subscribed && events) {
      subscribed = true;
      await events.subscribe(CHANGED_CHANNEL, invalidate).catch(() => (subscribed = false));
    }
    const started = generation;
    const [all, lists] = await Promise.all([db.select().from(plans), db.select({ planId: planModels.planId, modelId: planModels.modelId }).from(planModels)]);
    const listMap = new Map<string, Set<string>>();
    for (const { planId, modelId } of lists) {
      const set = listMap.get(planId) ?? new Set<string>();
      set.add(modelId);
      listMap.set(planId, set);
    }
    const listed = all
      .filter((p) => p.status === 'ACTIVE' && !p.internal)
      .sort((a, b) => a.sortOrder - b.sortOrder || a.priceCents - b.priceCents || a.slug.localeCompare(b.slug));
    const snap: PlansSnapshot = { all, byId: new Map(all.map((p) => [p.id, p])), bySlug: new Map(all.map((p) => [p.slug, p])), lists: listMap, listed };
    if (generation === started) cached = { snapshot: snap, at: performance.now() };
    return snap;
  }

  async function changed(): Promise<void> {
    invalidate();
    await events?.publish(CHANGED_CHANNEL, { at: clock.now().toISOString() }).catch(() => undefined);
  }

  const grants = (snap: PlansSnapshot, plan: PlanRow, modelId: string) => plan.allModels || (snap.lists.get(plan.id)?.has(modelId) ?? false);

  const accessBySnapshot = new WeakMap<PlansSnapshot, ReturnType<typeof buildAccess>>();
  const accessOf = (snap: PlansSnapshot) => {
    let access = accessBySnapshot.get(snap);
    if (!access) accessBySnapshot.set(snap, (access = buildAccess(snap)));
    return access;
  };

  /** Caller-independent access facts of one plans state, memoised for as long as that state is current. */
  function buildAccess(snap: PlansSnapshot) {
    const byPrice = [...snap.listed].sort((a, b) => a.priceCents - b.priceCents || a.sortOrder - b.sortOrder);
    const memo = new Map<string, PlanRow[] | null>();
    return {
      /** false for a plan that does not grant the model, or no plan at all. */
      allowed(planId: string | null, modelId: string): boolean {
        const plan = planId ? snap.byId.get(planId) : undefined;
        return plan ? grants(snap, plan, modelId) : false;
      },
      /** Public plans granting the model, cheapest first, without the caller's; empty when every plan grants it. */
      availableOn(modelId: string, excludePlanId: string | null): PlanRef[] {
        let reaching = memo.get(modelId);
        if (reaching === undefined) {
          const granting = byPrice.filter((p) => grants(snap, p, modelId));
          reaching = granting.length === byPrice.length ? null : granting;
          memo.set(modelId, reaching);
        }
        if (!reaching) return [];
        return reaching.filter((p) => p.id !== excludePlanId).map((p) => ({ slug: p.slug, name: p.name, priceCents: p.priceCents }));
      },
    };
  }

  function modelsOfPlan(snap: PlansSnapshot, cat: CatalogSnapshot, plan: PlanRow): { allowed: ModelEntry[]; servable: ModelEntry[] } {
    const allowed: ModelEntry[] = [];
    if (plan.allModels) {
      for (const entry of cat.bySlug.values()) if (entry.row.availability !== 'RETIRED') allowed.push(entry);
    } else {
      for (const id of snap.lists.get(plan.id) ?? []) {
        const entry = cat.byId.get(id);
        if (entry && entry.row.availability !== 'RETIRED') allowed.push(entry);
      }
    }
    return { allowed, servable: cat.listed.filter((e) => plan.allModels || snap.lists.get(plan.id)?.has(e.row.id)) };
  }

  async function view(plan: PlanRow, snap: PlansSnapshot, cat: CatalogSnapshot, live: string[]) {
    const { allowed, servable } = modelsOfPlan(snap, cat, plan);
    const policy = plan.allowedChannels.length > 0 ? plan.allowedChannels : live;
    return {
      id: plan.id,
      slug: plan.slug,
      name: plan.name,
      description: plan.description,
      interval: plan.interval,
      priceCents: plan.priceCents,
      currency: plan.currency,
      trialDays: plan.trialDays,
      tokenAllowance: plan.tokenAllowance,
      sortOrder: plan.sortOrder,
      limits: { ...plan.limits, tokensPerCycle: plan.tokenAllowance },
      features: {
        ...plan.features,
        signupDefault: plan.features.signupDefault === true,
        apiAccess: plan.features.apiAccess === true,
        modelAccess: groupByKind(servable),
      },
      allowedModelIds: allowed.map((e) => e.row.id),
      servableModelIds: servable.map((e) => e.row.id),
      allowedChannels: plan.allowedChannels,
      // A free plan has nothing to pay, so no channel is offered for it.
      payableWith: plan.priceCents > 0 ? policy.filter((slug) => live.includes(slug)) : [],
    };
  }

  const liveChannels = deps.liveChannels ?? (async () => []);

  async function publicPlan(slug: string): Promise<{ plan: PlanRow; snap: PlansSnapshot }> {
    const snap = await snapshot();
    const plan = snap.bySlug.get(slug);
    if (!plan || plan.status !== 'ACTIVE' || plan.internal) throw notFound(`No plan "${slug}". See GET /v1/plans for the plans on sale.`);
    return { plan, snap };
  }

  return {
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
      return Promise.all(snap.listed.map((plan) => view(plan, snap, cat, live)));
    },

    /** A public plan by slug; 404 for unknown, archived and internal plans. */
    async getPublic(slug: string) {
      const { plan, snap } = await publicPlan(slug);
      const [cat, live] = await Promise.all([catalog.snapshot(), liveChannels()]);
      return view(plan, snap, cat, live);
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
      if (inserted.length > 0) await changed();
    },

    async disallowModel(planId: string, modelId: string): Promise<void> {
      await db.delete(planModels).where(and(eq(planModels.planId, planId), eq(planModels.modelId, modelId)));
      await changed();
    },
  };
}

export type PlansService = ReturnType<typeof createPlansService>;
