import { planModels, plans } from '../../db/schema/plans.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';

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

const CHANGED_CHANNEL = 'plans_changed';

/**
 * Every plan and allow-list in one in-process copy, kept for `ttlMs` and dropped on every instance when a plan changes
 * (a copy loaded while a change was made is not kept).
 */
export function createPlansSnapshots(deps: { db: Db; clock: Clock; events?: EventBus; ttlMs: number }) {
  const { db, clock, events, ttlMs } = deps;
  let cached: { snapshot: PlansSnapshot; at: number } | null = null;
  let generation = 0;
  let subscribed = false;

  const invalidate = () => {
    generation++;
    cached = null;
  };
  // Changes announced while the listener was reconnecting were missed: the snapshot may be stale.
  events?.onReconnect(invalidate);

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

  return { snapshot, invalidate, changed };
}
