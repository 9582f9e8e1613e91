import { asc, eq } from 'drizzle-orm';
import { planModels, plans, type PlanFeatures, type PlanInterval } from '../../db/schema/plans.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import type { AuditWriter } from '../audit/service.js';
import type { CatalogService } from '../catalog/service.js';

type PlanRow = typeof plans.$inferSelect;

export interface PlanInput {
  slug: string;
  name: string;
  description?: string;
  interval: PlanInterval;
  priceCents: number;
  currency: string;
  trialDays?: number;
  tokenAllowance?: number;
  limits?: Record<string, unknown>;
  features?: PlanFeatures;
  /** true: every model of the catalog; false: only `modelIds`. */
  allModels?: boolean;
  modelIds?: string[];
  /** Payment channel slugs the plan may be bought with; empty means every live channel. */
  allowedChannels?: string[];
  sortOrder?: number;
}

export type PlanPatch = Partial<Omit<PlanInput, 'slug'>> & { status?: 'ACTIVE' | 'ARCHIVED' };

/** A plan as operators see it (archived and internal ones included), with its allow-list. */
const adminPlanView = (row: PlanRow, modelIds: string[]) => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  description: row.description,
  interval: row.interval,
  priceCents: row.priceCents,
  currency: row.currency,
  trialDays: row.trialDays,
  tokenAllowance: row.tokenAllowance,
  limits: row.limits,
  features: row.features,
  allModels: row.allModels,
  modelIds: row.allModels ? [] : [...modelIds].sort(),
  allowedChannels: row.allowedChannels,
  status: row.status,
  internal: row.internal,
  sortOrder: row.sortOrder,
  seedManaged: row.seedManaged,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});
export type AdminPlanView = ReturnType<typeof adminPlanView>;

/**
 * Plans as operators manage them: create, edit (allowance, price, allow-list, payment channels) and archive. An
 * archived plan leaves the public list, answers 404 by slug and at checkout, and its subscribers keep it. Every change
 * commits with its audit row; the plans cache then drops on every instance.
 */
export function createPlansAdmin(deps: {
  db: Db;
  clock: Clock;
  catalog: Pick<CatalogService, 'snapshot'>;
  liveChannels: () => Promise<string[]>;
  changed: () => Promise<void>;
}) {
  const { db, clock, catalog, liveChannels, changed } = deps;

  async function load(dbOrTx: Db | Tx, id: string) {
    const [row] = await dbOrTx.select().from(plans).where(eq(plans.id, id));
    if (!row) throw notFound(`No plan with id "${id}". See GET /v1/admin/plans.`);
    const ids = await dbOrTx.select({ modelId: planModels.modelId }).from(planModels).where(eq(planModels.planId, id));
    return adminPlanView(
      row,
      ids.map((r) => r.modelId),
    );
  }

  /** 400 naming what is wrong: unknown models or channels, models given to a plan that grants every model. */
  async function check(input: { allModels?: boolean; modelIds?: string[]; allowedChannels?: string[]; currency?: string }, allModels: boolean): Promise<void> {
    if (input.modelIds && input.modelIds.length > 0) {
      if (allModels) throw badRequest('modelIds is for plans that do not grant every model: send allModels: false with it.', { field: 'modelIds' });
      const snap = await catalog.snapshot();
      const unknown = input.modelIds.filter((id) => !snap.byId.has(id));
      if (unknown.length > 0) throw badRequest(`Unknown model ids: ${unknown.join(', ')}. See GET /v1/admin/models.`, { field: 'modelIds', unknown });
    }
    if (input.allowedChannels && input.allowedChannels.length > 0) {
      const live = await liveChannels();
      const unknown = input.allowedChannels.filter((slug) => !live.includes(slug));
      if (unknown.length > 0) {
        throw badRequest(`Unknown or unavailable payment channels: ${unknown.join(', ')}. Channels available now: ${live.join(', ') || 'none'}.`, {
          field: 'allowedChannels',
          unknown,
          available: live,
        });
      }
    }
  }

  async function replaceModels(tx: Tx, planId: string, modelIds: string[], now: Date): Promise<void> {
    await tx.delete(planModels).where(eq(planModels.planId, planId));
    if (modelIds.length > 0) await tx.insert(planModels).values([...new Set(modelIds)].map((modelId) => ({ planId, modelId, createdAt: now })));
  }

  return {
    async list() {
      const [rows, lists] = await Promise.all([
        db.select().from(plans).orderBy(asc(plans.sortOrder), asc(plans.priceCents), asc(plans.slug)),
        db.select({ planId: planModels.planId, modelId: planModels.modelId }).from(planModels),
      ]);
      return {
        items: rows.map((row) =>
          adminPlanView(
            row,
            lists.filter((l) => l.planId === row.id).map((l) => l.modelId),
          ),
        ),
      };
    },

    get: (id: string) => load(db, id),

    async create(input: PlanInput, audit: AuditWriter): Promise<AdminPlanView> {
      const allModels = input.allModels ?? true;
      await check(input, allModels);
      const now = clock.now();
      const created = await db
        .transaction(async (tx) => {
          const [row] = await tx
            .insert(plans)
            .values({
              slug: input.slug,
              name: input.name,
              description: input.description ?? '',
              interval: input.interval,
              priceCents: input.priceCents,
              currency: input.currency.toUpperCase(),
              trialDays: input.trialDays ?? 0,
              tokenAllowance: input.tokenAllowance ?? 0,
              limits: input.limits ?? {},
              features: input.features ?? {},
              allModels,
              allowedChannels: input.allowedChannels ?? [],
              sortOrder: input.sortOrder ?? 0,
              seedManaged: false,
              createdAt: now,
              updatedAt: now,
            })
            .returning();
          await replaceModels(tx, row!.id, input.modelIds ?? [], now);
          const after = await load(tx, row!.id);
          await audit({ action: 'plan.create', targetType: 'plan', targetId: row!.id, before: null, after }, tx);
          return after;
        })
        .catch((err: unknown) => {
          throw isUniqueViolation(err) ? conflict(`A plan with the slug "${input.slug}" already exists.`, { field: 'slug' }) : err;
        });
      await changed();
      return created;
    },

    /** Edits a plan; `modelIds` replaces the allow-list; `status: ARCHIVED` archives it (ACTIVE restores it). */
    async update(id: string, patch: PlanPatch, audit: AuditWriter): Promise<AdminPlanView> {
      const current = await load(db, id);
      const allModels = patch.allModels ?? current.allModels;
      await check(patch, allModels);
      if (patch.status === 'ARCHIVED' && current.internal)
        throw badRequest('The internal playground plan cannot be archived: the admin playground runs on it.', { field: 'status' });
      const now = clock.now();
      const updated = await db.transaction(async (tx) => {
        const before = await load(tx, id);
        const { modelIds, currency, ...fields } = patch;
        await tx
          .update(plans)
          .set({ ...fields, ...(currency ? { currency: currency.toUpperCase() } : {}), seedManaged: false, updatedAt: now })
          .where(eq(plans.id, id));
        if (modelIds !== undefined) await replaceModels(tx, id, modelIds, now);
        else if (allModels) await replaceModels(tx, id, [], now);
        const after = await load(tx, id);
        const action = patch.status && patch.status !== before.status ? (patch.status === 'ARCHIVED' ? 'plan.archive' : 'plan.restore') : 'plan.update';
        await audit({ action, targetType: 'plan', targetId: id, before, after }, tx);
        return after;
      });
      await changed();
      return updated;
    },
  };
}

export type PlansAdmin = ReturnType<typeof createPlansAdmin>;
