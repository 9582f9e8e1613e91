import type { plans } from '../../db/schema/plans.js';
import type { PlansSnapshot } from './snapshot.js';

type PlanRow = typeof plans.$inferSelect;

export interface PlanRef {
  slug: string;
  name: string;
  priceCents: number;
}

const grants = (snap: PlansSnapshot, plan: PlanRow, modelId: string) => plan.allModels || (snap.lists.get(plan.id)?.has(modelId) ?? false);

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

/** The access facts of a plans state, built once per state (a new state is a new snapshot). */
export function createAccessMemo() {
  const accessBySnapshot = new WeakMap<PlansSnapshot, ReturnType<typeof buildAccess>>();
  return (snap: PlansSnapshot) => {
    let access = accessBySnapshot.get(snap);
    if (!access) accessBySnapshot.set(snap, (access = buildAccess(snap)));
    return access;
  };
}
