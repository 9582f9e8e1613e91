import { and, eq, gt, lt, sql } from 'drizzle-orm';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/http/errors.js';
import { storedResponses, type ResponseOwnerType } from '../../db/schema/responses.js';
import { MAX_MESSAGES } from '../gateway/index.js';
import type { KeptItem } from './responses.input.js';
import type { ResponseObjectBody } from './responses.schemas.js';

/** How long a stored response is kept (OpenAI's retention). */
export const RESPONSE_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** Who a stored response belongs to: the workspace whose subscription the call metered against, else the user. */
export interface ResponseOwner {
  type: ResponseOwnerType;
  id: string;
}

export interface NewStoredResponse {
  owner: ResponseOwner;
  userId: string;
  requestId: string;
  previousResponseId: string | null;
  inputItems: KeptItem[];
  response: ResponseObjectBody;
}

/**
 * A previous_response_id that cannot be used: 404 like any id the caller cannot see (OpenAI answers 400), with
 * OpenAI's code so clients that test the code still recognise it.
 */
const previousNotFound = (id: string, why = '') =>
  new AppError(404, 'PREVIOUS_RESPONSE_NOT_FOUND', `Previous response with id '${id}' not found${why}. Send the conversation as input instead.`, [
    { field: 'previous_response_id', message: 'was not found' },
  ]);

interface ChainRow {
  id: string;
  previous_response_id: string | null;
  input_items: KeptItem[];
  output: KeptItem[];
  depth: number;
}

/** The files that keep a row's images (responses.images.ts), read in the database: a row is never loaded for them. */
const imageFileIds = sql<string[] | null>`jsonb_path_query_array(${storedResponses.inputItems}, '$[*].content[*].file_id')`;
const fileIdsOf = (rows: { fileIds: string[] | null }[]) => rows.flatMap((row) => row.fileIds ?? []);

const rowsOf = <T>(result: unknown) => (result as { rows: T[] }).rows; // both drivers answer raw SQL with `{ rows }`

/** The `stored_responses` table: one row per stored response, read only by its owner and only until it expires. */
export function createResponseStore({ db, clock }: { db: Db; clock: Clock }) {
  const visible = (owner: ResponseOwner, id: string) =>
    and(
      eq(storedResponses.id, id),
      eq(storedResponses.ownerType, owner.type),
      eq(storedResponses.ownerId, owner.id),
      gt(storedResponses.expiresAt, clock.now()),
    );

  return {
    /** The response kept under `id`, whoever owns it (an Idempotency-Key replay looks for its first call's). */
    async kept(id: string): Promise<ResponseObjectBody | undefined> {
      const [row] = await db.select({ response: storedResponses.response }).from(storedResponses).where(eq(storedResponses.id, id));
      return row?.response as unknown as ResponseObjectBody | undefined;
    },

    /**
     * Keeps a finished response; when its id is already kept (a concurrent replay of the same Idempotency-Key) answers
     * that one, `inserted: false`.
     */
    async save(entry: NewStoredResponse): Promise<{ response: ResponseObjectBody; inserted: boolean }> {
      const now = clock.now();
      const [inserted] = await db
        .insert(storedResponses)
        .values({
          id: entry.response.id,
          requestId: entry.requestId,
          ownerType: entry.owner.type,
          ownerId: entry.owner.id,
          userId: entry.userId,
          previousResponseId: entry.previousResponseId,
          inputItems: entry.inputItems,
          response: entry.response,
          createdAt: now,
          expiresAt: new Date(now.getTime() + RESPONSE_RETENTION_MS),
        })
        .onConflictDoNothing({ target: storedResponses.id })
        .returning({ response: storedResponses.response });
      if (inserted) return { response: inserted.response as unknown as ResponseObjectBody, inserted: true };
      const [kept] = await db.select({ response: storedResponses.response }).from(storedResponses).where(eq(storedResponses.id, entry.response.id));
      return { response: (kept?.response as unknown as ResponseObjectBody | undefined) ?? entry.response, inserted: false };
    },

    async find(owner: ResponseOwner, id: string) {
      const [row] = await db.select().from(storedResponses).where(visible(owner, id));
      return row ? { response: row.response as unknown as ResponseObjectBody, inputItems: row.inputItems as unknown as Required<KeptItem>[] } : undefined;
    },

    /** Deletes the response; null when the caller cannot see it, else the files of its images (to delete with it). */
    async remove(owner: ResponseOwner, id: string): Promise<{ imageFileIds: string[] } | null> {
      const deleted = await db.delete(storedResponses).where(visible(owner, id)).returning({ fileIds: imageFileIds });
      return deleted.length > 0 ? { imageFileIds: fileIdsOf(deleted) } : null;
    },

    /**
     * The conversation up to and including response `id`, oldest first: each response's input items, then its output.
     * One statement follows `previous_response_id` back; every link must still be there (a deleted or expired one
     * cannot be rebuilt honestly, so the call is refused).
     */
    async conversation(owner: ResponseOwner, id: string): Promise<KeptItem[]> {
      const now = clock.now().toISOString();
      const mine = sql`owner_type = ${owner.type} and owner_id = ${owner.id} and expires_at > ${now}::timestamptz`;
      const result = await db.execute(sql`
        with recursive chain as (
          select id, previous_response_id, input_items, response -> 'output' as output, 0 as depth
          from stored_responses where id = ${id} and ${mine}
          union all
          select r.id, r.previous_response_id, r.input_items, r.response -> 'output', c.depth + 1
          from stored_responses r join chain c on r.id = c.previous_response_id
          where r.owner_type = ${owner.type} and r.owner_id = ${owner.id} and r.expires_at > ${now}::timestamptz and c.depth < ${MAX_MESSAGES}
        )
        select id, previous_response_id, input_items, output, depth from chain order by depth desc`);
      const chain = rowsOf<ChainRow>(result);
      const oldest = chain[0];
      if (!oldest) throw previousNotFound(id);
      if (oldest.previous_response_id) {
        const why =
          Number(oldest.depth) >= MAX_MESSAGES
            ? ` (its conversation is longer than ${MAX_MESSAGES} responses)`
            : ` (the conversation reaches back to '${oldest.previous_response_id}', which was deleted or has expired)`;
        throw previousNotFound(id, why);
      }
      return chain.flatMap((row) => [...row.input_items, ...row.output]);
    },

    /** Deletes what expired (the reads above already ignore it), in `tx`: how many rows went, and their images' files. */
    async purgeExpired(tx: DbOrTx): Promise<{ purged: number; imageFileIds: string[] }> {
      const deleted = await tx.delete(storedResponses).where(lt(storedResponses.expiresAt, clock.now())).returning({ fileIds: imageFileIds });
      return { purged: deleted.length, imageFileIds: fileIdsOf(deleted) };
    },

    /** A deleted account's own responses go with it (its workspaces' stay with them): answers their images' files. */
    async removeOwnedBy(tx: DbOrTx, userId: string): Promise<string[]> {
      const deleted = await tx
        .delete(storedResponses)
        .where(and(eq(storedResponses.ownerType, 'USER'), eq(storedResponses.ownerId, userId)))
        .returning({ fileIds: imageFileIds });
      return fileIdsOf(deleted);
    },
  };
}

export type ResponseStore = ReturnType<typeof createResponseStore>;
