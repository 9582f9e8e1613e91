import { planModels, plans } from '../../db/schema/plans.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';

type PlanRow = typeof plans.$inferSelect;

export interface PlansSnapshot {
  all: PlanRow[];
  byId: Map<string, PlanRow>;
  bySlug: Map<string, PlanRow>;
  /** Allow-lists of the plans that do not grant every model. */
  lists: Map<string, Set<string>>;
  /** Listed plans: active, not internal; ordered by sortOrder then price. */
  listed: PlanRow[];
}

const SNAPSHOT = 'snapshot';

async function loadPlansSnapshot(db: Db): Promise<PlansSnapshot> {
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
  return { all, byId: new Map(all.map((p) => [p.id, p])), bySlug: new Map(all.map((p) => [p.slug, p])), lists: listMap, listed };
}

/**
 * Every plan and allow-list in one in-process copy (one entry of an invalidating cache), kept for `ttlMs` and dropped
 * on every instance when a plan changes (NOTIFY `cache_plans`).
 */
export function createPlansSnapshots(deps: { db: Db; events?: EventBus; ttlMs: number }) {
  const { db, events, ttlMs } = deps;
  const cache = createInvalidatingCache<PlansSnapshot>({ name: 'plans', bus: events, ttlMs, load: () => loadPlansSnapshot(db) });
  return {
    snapshot: (): Promise<PlansSnapshot> => cache.get(SNAPSHOT),
    /** Drops this instance's copy only. */
    invalidate: (): void => cache.forget(SNAPSHOT),
    /**
     * Announces a plan change. Inside a transaction the notification goes out on commit; after a committed write a
     * failed NOTIFY does not fail it (other instances catch up within the TTL).
     */
    changed: (tx?: DbOrTx): Promise<void> => (tx ? cache.changed(SNAPSHOT, tx) : cache.changed(SNAPSHOT).catch(() => undefined)),
  };
}
