import { asc, eq } from 'drizzle-orm';
import { modelFallbacks } from '../../../db/schema/gateway.js';
import type { Db } from '../../../platform/db/database.js';
import { badRequest, notFound } from '../../../platform/http/errors.js';
import type { AuditWriter } from '../../audit/service.js';
import type { CatalogService } from '../../catalog/service.js';

/** Fallbacks one model may have. */
export const MAX_FALLBACKS = 5;

export interface FallbacksDeps {
  db: Db;
  catalog: Pick<CatalogService, 'getById' | 'getBySlug'>;
}

export interface FallbackView {
  position: number;
  modelId: string;
  slug: string | null;
}

/** Operators' ordered fallback models per model, read by the text gateway when a provider is down. */
export function createFallbacks(deps: FallbacksDeps) {
  const { db, catalog } = deps;

  async function modelOrThrow(id: string) {
    const model = await catalog.getById(id);
    if (!model) throw notFound(`No model with id ${id}. Read model ids from GET /v1/models.`);
    return model;
  }

  /** The fallback model ids of `modelId`, in order (read only when its provider failed). */
  async function idsOf(modelId: string): Promise<string[]> {
    const rows = await db.select().from(modelFallbacks).where(eq(modelFallbacks.modelId, modelId)).orderBy(asc(modelFallbacks.position));
    return rows.map((row) => row.fallbackModelId);
  }

  async function view(modelId: string) {
    const model = await modelOrThrow(modelId);
    const ids = await idsOf(modelId);
    const fallbacks: FallbackView[] = [];
    for (const [position, id] of ids.entries()) fallbacks.push({ position, modelId: id, slug: (await catalog.getById(id))?.row.slug ?? null });
    return { modelId, slug: model.row.slug, fallbacks };
  }

  return {
    idsOf,
    view,

    /** Replaces the model's fallbacks (by slug, in order), audited in the same transaction. */
    async set(modelId: string, slugs: string[], audit: AuditWriter, reason: string | null = null) {
      const model = await modelOrThrow(modelId);
      const ids: string[] = [];
      for (const [index, slug] of slugs.entries()) {
        const fallback = await catalog.getBySlug(slug);
        if (!fallback)
          throw badRequest(`No model with slug "${slug}". Read model slugs from GET /v1/models.`, [{ field: `fallbacks.${index}`, message: 'unknown model' }]);
        if (fallback.row.id === model.row.id)
          throw badRequest(`A model cannot fall back to itself ("${slug}").`, [{ field: `fallbacks.${index}`, message: 'is the model itself' }]);
        if (fallback.row.type !== model.row.type) {
          throw badRequest(
            `"${slug}" is a ${fallback.row.type} model; a fallback of the ${model.row.type} model "${model.row.slug}" must be of the same type.`,
            [{ field: `fallbacks.${index}`, message: 'has another type' }],
          );
        }
        ids.push(fallback.row.id);
      }
      const before = await view(modelId);
      await db.transaction(async (tx) => {
        await tx.delete(modelFallbacks).where(eq(modelFallbacks.modelId, modelId));
        if (ids.length > 0) await tx.insert(modelFallbacks).values(ids.map((fallbackModelId, position) => ({ modelId, position, fallbackModelId })));
        await audit(
          { action: 'model.fallbacks.set', targetType: 'model', targetId: modelId, before: before.fallbacks.map((f) => f.slug), after: slugs, reason },
          tx,
        );
      });
      return view(modelId);
    },
  };
}

export type Fallbacks = ReturnType<typeof createFallbacks>;
