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

const rowsOf = <T>(result: unknown) => (result as { rows: T[] }).rows; // both drivers answer raw SQL with `{ rows }`

/** The `stored_responses` table: one row per stored response, read only by its owner and only until it expires. */
export function createResponseStore({ db, clock }: { db: Db; clock: Clock }) {
  const visible = (owner: ResponseOwner, id: string) =>
    and(eq(storedResponses.id, id), eq(storedResponses.ownerType, owner.type), eq(storedResponses.ownerId, owner.id), gt(storedResponses.expiresAt, clock.now()));

  return {
    /** Keeps a finished response; an Idempotency-Key replay finds the row its first call kept and answers that. */
    async save(entry: NewStoredResponse): Promise<ResponseObjectBody> {
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
      if (inserted) return inserted.response as unknown as ResponseObjectBody;
      const [kept] = await db.select({ response: storedResponses.response }).from(storedResponses).where(eq(storedResponses.id, entry.response.id));
      return (kept?.response as unknown as ResponseObjectBody | undefined) ?? entry.response;
    },

    async find(owner: ResponseOwner, id: string) {
      const [row] = await db.select().from(storedResponses).where(visible(owner, id));
      return row ? { response: row.response as unknown as ResponseObjectBody, inputItems: row.inputItems as unknown as Required<KeptItem>[] } : undefined;
    },

    async remove(owner: ResponseOwner, id: string): Promise<boolean> {
      const deleted = await db.delete(storedResponses).where(visible(owner, id)).returning({ id: storedResponses.id });
      return deleted.length > 0;
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
        const why = Number(oldest.depth) >= MAX_MESSAGES ? ` (its conversation is longer than ${MAX_MESSAGES} responses)` : ` (the conversation reaches back to '${oldest.previous_response_id}', which was deleted or has expired)`;
        throw previousNotFound(id, why);
      }
      return chain.flatMap((row) => [...row.input_items, ...row.output]);
    },

    /** Deletes what expired (the reads above already ignore it); returns how many rows went. */
    async purgeExpired(): Promise<number> {
      const deleted = await db.delete(storedResponses).where(lt(storedResponses.expiresAt, clock.now())).returning({ id: storedResponses.id });
      return deleted.length;
    },

    /** A deleted account's own responses go with it (its workspaces' stay with them). */
    async removeOwnedBy(tx: DbOrTx, userId: string): Promise<void> {
      await tx.delete(storedResponses).where(and(eq(storedResponses.ownerType, 'USER'), eq(storedResponses.ownerId, userId)));
    },
  };
}

export type ResponseStore = ReturnType<typeof createResponseStore>;
