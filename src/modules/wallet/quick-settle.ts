import { newId } from '../../platform/ids.js';
import { bound, type BoundSql } from '../../platform/db/bound.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { writeAsOneStatement, type StatementPart } from '../../platform/db/one-statement.js';

export interface QuickSettlement {
  parts: StatementPart[];
  /** Holds when the reservation was closed by these parts. */
  closed: BoundSql;
  /** The tokens given back (the reservation's unused part) once closed: a select-list expression (no parameters). */
  unused: string;
  message: string;
  /**
   * Select-list columns (`wallet_after_*`) with the wallet as the settlement left it: owner, balance and whether a
   * low-balance warning is out (no parameters). Read them back with `walletAfter(row)`; null columns when nothing was
   * closed.
   */
  after: string;
}

/** The wallet after a settlement, for the low-balance check (no further round trip). */
export interface WalletAfter {
  walletId: string;
  ownerType: string;
  ownerId: string;
  balance: number;
  lowBalanceWarned: boolean;
}

/** The `after` columns of a settlement's result row, or null when the settlement closed nothing. */
export function walletAfter(row: Record<string, unknown>): WalletAfter | null {
  const { wallet_after_id: walletId, wallet_after_owner_type: ownerType, wallet_after_owner_id: ownerId } = row;
  if (typeof walletId !== 'string' || typeof ownerType !== 'string' || typeof ownerId !== 'string') return null;
  return {
    walletId,
    ownerType,
    ownerId,
    balance: Number(row.wallet_after_balance),
    lowBalanceWarned: row.wallet_after_warned === true,
  };
}

/**
 * The common settlement as statement parts: an open reservation that used no more than it held, on a wallet without
 * unpaid overrun, is closed with the REFUND of its unused part and the balance moved by the same amount. Anything
 * else (an overrun, a debt to collect, an already closed reservation) closes nothing, for the general path that locks
 * and decides step by step. Exactly once: the reservation's status is the guard.
 */
const WALLET_CLOSED = `
  update wallet_reservations r
  set status = 'SETTLED', used_tokens = $2, charged_tokens = $2, shortfall_tokens = 0, closed_at = $3::timestamptz
  from wallets w
  where r.request_id = $1 and r.status in ('OPEN', 'IN_FLIGHT') and r.tokens >= $2
    and w.id = r.wallet_id and w.debt = 0
  returning r.wallet_id, r.tokens - $2 as unused, w.owner_type, w.owner_id, w.balance + (r.tokens - $2) as balance_after, w.low_balance_warned`;
const WALLET_REFUNDED = `
  insert into wallet_ledger (id, wallet_id, kind, amount, note, request_id, idempotency_key, created_at)
  select $1::uuid, wallet_id, 'REFUND', unused, 'Unused part of the reservation', $2, $3, $4::timestamptz
  from wallet_closed where unused > 0`;
const WALLET_MOVED = `
  update wallets set balance = balance + wallet_closed.unused, updated_at = $1::timestamptz
  from wallet_closed where wallets.id = wallet_closed.wallet_id and wallet_closed.unused > 0`;
const CLOSED = 'exists (select 1 from wallet_closed)';
const UNUSED = 'coalesce((select unused from wallet_closed), 0)';
const AFTER = `(select wallet_id from wallet_closed) as wallet_after_id, (select owner_type from wallet_closed) as wallet_after_owner_type,
  (select owner_id from wallet_closed) as wallet_after_owner_id, (select balance_after from wallet_closed) as wallet_after_balance,
  (select low_balance_warned from wallet_closed) as wallet_after_warned`;

/**
 * The common settlement as statement parts: an open reservation that used no more than it held, on a wallet without
 * unpaid overrun, is closed with the REFUND of its unused part and the balance moved by the same amount. Anything
 * else (an overrun, a debt to collect, an already closed reservation) closes nothing, for the general path that locks
 * and decides step by step. Exactly once: the reservation's status is the guard. Constant texts (bound SQL).
 */
export function quickSettlement(input: { requestId: string; actualTokens: number }, now: Date): QuickSettlement {
  const at = now.toISOString();
  return {
    parts: [
      { name: 'wallet_closed', query: bound(WALLET_CLOSED, [input.requestId, input.actualTokens, at]) },
      { name: 'wallet_refunded', query: bound(WALLET_REFUNDED, [newId(), input.requestId, `settle:${input.requestId}`, at]) },
      { name: 'wallet_moved', query: bound(WALLET_MOVED, [at]) },
    ],
    closed: bound(CLOSED, []),
    unused: UNUSED,
    message: `The reservation ${input.requestId} is not open within its tokens on a wallet without debt`,
    after: AFTER,
  };
}

/**
 * The quick settlement alone, in one statement; null when it does not apply (the general path decides then). It needs
 * no condition (every part depends on the closed reservation), so it never fails a caller's transaction.
 */
export async function quickSettle(
  db: DbOrTx,
  input: { requestId: string; actualTokens: number },
  now: Date,
): Promise<{ charged: number; unused: number; after: WalletAfter | null } | null> {
  const settlement = quickSettlement(input, now);
  const row = await writeAsOneStatement<{ closed: boolean; unused: number | string }>(db, settlement.parts, {
    select: bound(`${CLOSED} as closed, ${UNUSED} as unused, ${AFTER}`, []),
  });
  return row.closed ? { charged: input.actualTokens, unused: Number(row.unused), after: walletAfter(row) } : null;
}
