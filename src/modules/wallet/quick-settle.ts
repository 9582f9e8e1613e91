import { sql, type SQL } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import type { DbOrTx } from '../../platform/db/database.js';
import { writeAsOneStatement, type StatementPart } from '../../platform/db/one-statement.js';

export interface QuickSettlement {
  parts: StatementPart[];
  /** Holds when the reservation was closed by these parts. */
  closed: SQL;
  /** The tokens given back (the reservation's unused part) once closed; select it beside `closed`. */
  unused: SQL;
  message: string;
}

/**
 * The common settlement as statement parts: an open reservation that used no more than it held, on a wallet without
 * unpaid overrun, is closed with the REFUND of its unused part and the balance moved by the same amount. Anything
 * else (an overrun, a debt to collect, an already closed reservation) closes nothing, for the general path that locks
 * and decides step by step. Exactly once: the reservation's status is the guard.
 */
export function quickSettlement(input: { requestId: string; actualTokens: number }, now: Date): QuickSettlement {
  const at = now.toISOString();
  return {
    parts: [
      {
        name: 'wallet_closed',
        query: sql`
          update wallet_reservations r
          set status = 'SETTLED', used_tokens = ${input.actualTokens}, charged_tokens = ${input.actualTokens}, shortfall_tokens = 0, closed_at = ${at}
          from wallets w
          where r.request_id = ${input.requestId} and r.status in ('OPEN', 'IN_FLIGHT') and r.tokens >= ${input.actualTokens}
            and w.id = r.wallet_id and w.debt = 0
          returning r.wallet_id, r.tokens - ${input.actualTokens} as unused`,
      },
      {
        name: 'wallet_refunded',
        query: sql`
          insert into wallet_ledger (id, wallet_id, kind, amount, note, request_id, idempotency_key, created_at)
          select ${uuidv7()}::uuid, wallet_id, 'REFUND', unused, 'Unused part of the reservation', ${input.requestId}, ${`settle:${input.requestId}`}, ${at}
          from wallet_closed where unused > 0`,
      },
      {
        name: 'wallet_moved',
        query: sql`
          update wallets set balance = balance + wallet_closed.unused, updated_at = ${at}
          from wallet_closed where wallets.id = wallet_closed.wallet_id and wallet_closed.unused > 0`,
      },
    ],
    closed: sql`exists (select 1 from wallet_closed)`,
    unused: sql`coalesce((select unused from wallet_closed), 0)`,
    message: `The reservation ${input.requestId} is not open within its tokens on a wallet without debt`,
  };
}

/**
 * The quick settlement alone, in one statement; null when it does not apply (the general path decides then). It needs
 * no condition (every part depends on the closed reservation), so it never fails a caller's transaction.
 */
export async function quickSettle(db: DbOrTx, input: { requestId: string; actualTokens: number }, now: Date): Promise<{ charged: number; unused: number } | null> {
  const settlement = quickSettlement(input, now);
  const row = await writeAsOneStatement<{ closed: boolean; unused: number | string }>(db, settlement.parts, {
    select: sql`${settlement.closed} as closed, ${settlement.unused} as unused`,
  });
  return row.closed ? { charged: input.actualTokens, unused: Number(row.unused) } : null;
}
