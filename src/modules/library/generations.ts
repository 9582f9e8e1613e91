import { newId } from '../../platform/ids.js';
import { and, arrayContains, eq, ilike, ne, type SQL } from 'drizzle-orm';
import { generations, type GenerationKind, type GenerationVisibility } from '../../db/schema/library.js';
import type { ModelType } from '../../db/schema/catalog.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { bound, runBound } from '../../platform/db/bound.js';
import { domainEventInsert, domainEventPart } from '../../platform/events/outbox.js';
import type { StatementPart } from '../../platform/db/one-statement.js';
import { notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import { normaliseTags } from './tags.js';

export type Generation = typeof generations.$inferSelect;

export interface SaveGenerationInput {
  userId: string;
  kind: GenerationKind;
  prompt: string;
  /** TEXT `{ text }`; IMAGE `{ images: [{ url, mimeType }] }`; VIDEO `{ videos: [{ url, durationSeconds }] }`; AUDIO `{ audio: { url } }`. */
  output: Record<string, unknown>;
  modelId: string | null;
  thumbnailUrl?: string | null;
  tags?: string[];
  /** The gateway request that produced it: saving the same request twice keeps one item. */
  requestId?: string | null;
  /** The media job that produced it, carried by the `generation.persisted` event. */
  jobId?: string | null;
}

/** A library item as clients see it (spec A "Generation"). */
export interface GenerationView {
  id: string;
  kind: GenerationKind;
  prompt: string;
  thumbnailUrl: string | null;
  output: Record<string, unknown>;
  model: { slug: string; displayName: string; type: ModelType } | null;
  visibility: GenerationVisibility;
  tags: string[];
  favorite: boolean;
  createdAt: string;
}

export interface GenerationQuery {
  kind?: GenerationKind;
  favoritesOnly?: boolean;
  search?: string;
  tag?: string;
  limit: number;
  cursor?: string;
}

export interface GenerationChanges {
  favorite?: boolean;
  tags?: string[];
}

export interface GenerationsDeps {
  db: Db;
  clock: Clock;
  /** Model facts for the `model` field, read through the catalog service. */
  catalog: { getById(id: string): Promise<{ row: { slug: string; displayName: string; type: ModelType } } | undefined> };
  /** The owner's `defaultGenerationVisibility` preference, read inside the caller's transaction. */
  preferences: { defaultGenerationVisibility(userId: string, tx: DbOrTx): Promise<GenerationVisibility> };
}

const INSERT_GENERATION = `
  insert into generations (id, user_id, kind, prompt, output, model_id, thumbnail_url, visibility, tags, request_id, created_at)
  values ($1::uuid, $2::uuid, $3, $4, $5::text::jsonb, $6::uuid, $7, $8, $9::text[], $10, $11::timestamptz)`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `%`, `_` and `\` match literally inside the search text. */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** What a view of an item shows, for many items at once (posts show their generations): a named statement, no query building. */
const VIEWS_OF = `select id, kind, prompt, thumbnail_url, output, model_id, visibility, tags, favorite, created_at
  from generations where id = any($1::text[]::uuid[])`;
interface ViewColumns {
  id: string;
  kind: Generation['kind'];
  prompt: string;
  thumbnail_url: string | null;
  output: Record<string, unknown>;
  model_id: string | null;
  visibility: Generation['visibility'];
  tags: string[];
  favorite: boolean;
  created_at: Date;
}

export function createGenerations(deps: GenerationsDeps) {
  const { db, clock, catalog, preferences } = deps;

  async function toView(
    row: Pick<Generation, 'id' | 'kind' | 'prompt' | 'thumbnailUrl' | 'output' | 'modelId' | 'visibility' | 'tags' | 'favorite' | 'createdAt'>,
  ): Promise<GenerationView> {
    const model = row.modelId ? (await catalog.getById(row.modelId))?.row : undefined;
    return {
      id: row.id,
      kind: row.kind,
      prompt: row.prompt,
      thumbnailUrl: row.thumbnailUrl,
      output: row.output,
      model: model ? { slug: model.slug, displayName: model.displayName, type: model.type } : null,
      visibility: row.visibility,
      tags: row.tags,
      favorite: row.favorite,
      createdAt: row.createdAt.toISOString(),
    };
  }

  async function ownRow(userId: string, id: string): Promise<Generation> {
    if (!UUID.test(id)) throw notFound('No such generation in your library.');
    const [row] = await db
      .select()
      .from(generations)
      .where(and(eq(generations.id, id), eq(generations.userId, userId)));
    if (!row) throw notFound('No such generation in your library.');
    return row;
  }

  /**
   * A new item's row. The one place the visibility rule lives: text stays PRIVATE, image, video and audio take the
   * owner's `defaultGenerationVisibility`.
   */
  async function newItem(input: SaveGenerationInput, tx: DbOrTx) {
    const visibility: GenerationVisibility = input.kind === 'TEXT' ? 'PRIVATE' : await preferences.defaultGenerationVisibility(input.userId, tx);
    return {
      id: newId(),
      userId: input.userId,
      kind: input.kind,
      prompt: input.prompt,
      output: input.output,
      modelId: input.modelId,
      thumbnailUrl: input.thumbnailUrl ?? null,
      visibility,
      tags: normaliseTags(input.tags ?? []),
      requestId: input.requestId ?? null,
      createdAt: clock.now(),
    };
  }

  const persistedData = (row: { id: string; kind: GenerationKind }, input: SaveGenerationInput) => ({
    generationId: row.id,
    kind: row.kind,
    jobId: input.jobId ?? null,
  });
  const persistedEvent = (row: { id: string; kind: GenerationKind; userId: string; createdAt: Date }, input: SaveGenerationInput, tx: DbOrTx) =>
    domainEventInsert(tx, 'generation.persisted', persistedData(row, input), { userId: row.userId, at: row.createdAt });

  return {
    toView,

    /**
     * A new library item and its `generation.persisted` event as parts of the caller's combined statement, for a
     * request saved for the first time (a second save of the request fails the statement on the unique request id).
     */
    async saveGenerationParts(input: SaveGenerationInput, tx: DbOrTx = db): Promise<{ id: string; parts: StatementPart[] }> {
      const values = await newItem(input, tx);
      const row = [
        values.id,
        values.userId,
        values.kind,
        values.prompt,
        JSON.stringify(values.output),
        values.modelId,
        values.thumbnailUrl,
        values.visibility,
        values.tags,
        values.requestId,
        values.createdAt.toISOString(),
      ];
      return {
        id: values.id,
        parts: [
          { name: 'library_generation', query: bound(INSERT_GENERATION, row) },
          {
            name: 'library_persisted',
            query: domainEventPart('generation.persisted', persistedData(values, input), { userId: values.userId, at: values.createdAt }),
          },
        ],
      };
    },

    /** Stores a library item with its `generation.persisted` event. Saving the same gateway request again returns the first item. */
    async saveGeneration(input: SaveGenerationInput, tx: DbOrTx = db): Promise<Generation> {
      const values = await newItem(input, tx);
      const [row] = await tx.insert(generations).values(values).onConflictDoNothing({ target: generations.requestId }).returning();
      if (row) {
        // Every persisted generation is announced once, from here, in the saving transaction.
        await persistedEvent(row, input, tx);
        return row;
      }
      const [existing] = await tx.select().from(generations).where(eq(generations.requestId, input.requestId!));
      return existing!;
    },

    /** The caller's items, newest first; TEXT (the text history) only when asked for by `kind`. */
    async list(userId: string, query: GenerationQuery): Promise<{ items: GenerationView[]; nextCursor: string | null }> {
      const conditions: (SQL | undefined)[] = [
        eq(generations.userId, userId),
        query.kind ? eq(generations.kind, query.kind) : ne(generations.kind, 'TEXT'),
        query.favoritesOnly ? eq(generations.favorite, true) : undefined,
        query.search ? ilike(generations.prompt, likePattern(query.search)) : undefined,
        query.tag ? arrayContains(generations.tags, [query.tag]) : undefined,
      ];
      const page = await newestFirstPage(db, generations, 'createdAt', and(...conditions), query);
      return { items: await Promise.all(page.items.map(toView)), nextCursor: page.nextCursor };
    },

    /** One of the caller's items; another user's (or a missing) id is 404. */
    async get(userId: string, id: string): Promise<GenerationView> {
      return toView(await ownRow(userId, id));
    },

    /** Views of these items by id, whoever owns them (for modules that show published generations, e.g. posts). */
    async viewsOf(ids: string[], tx: DbOrTx = db): Promise<Map<string, GenerationView>> {
      if (ids.length === 0) return new Map();
      const { rows } = await runBound<ViewColumns>(tx, bound(VIEWS_OF, [[...new Set(ids)]]));
      return new Map(
        await Promise.all(
          rows.map(async (row) => {
            const { id, kind, prompt, output, visibility, tags, favorite } = row;
            return [
              id,
              await toView({
                id,
                kind,
                prompt,
                output,
                visibility,
                tags,
                favorite,
                thumbnailUrl: row.thumbnail_url,
                modelId: row.model_id,
                createdAt: row.created_at,
              }),
            ] as const;
          }),
        ),
      );
    },

    /** The owner's row itself (for modules that build on a generation, e.g. publishing). */
    ownRow,

    /** Marks an item favourite (or not) and replaces its tags. */
    async update(userId: string, id: string, changes: GenerationChanges): Promise<GenerationView> {
      const current = await ownRow(userId, id);
      const set: Partial<typeof generations.$inferInsert> = {};
      if (changes.favorite !== undefined) set.favorite = changes.favorite;
      if (changes.tags !== undefined) set.tags = normaliseTags(changes.tags);
      if (Object.keys(set).length === 0) return toView(current);
      const [row] = await db
        .update(generations)
        .set(set)
        .where(and(eq(generations.id, id), eq(generations.userId, userId)))
        .returning();
      return toView(row!);
    },

    /** Changes an item's visibility (publishing makes it PUBLIC), inside the caller's transaction when given one. */
    async setVisibility(userId: string, id: string, visibility: GenerationVisibility, tx: DbOrTx = db): Promise<void> {
      await tx
        .update(generations)
        .set({ visibility })
        .where(and(eq(generations.id, id), eq(generations.userId, userId)));
    },
  };
}

export type Generations = ReturnType<typeof createGenerations>;
