import { sql } from 'drizzle-orm';
import { newId } from '../../platform/ids.js';
import { bound, runBound } from '../../platform/db/bound.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { ownerKey, walletOrder, type WalletOwner } from './ledger.js';

export type ReserveRequest = WalletOwner & { tokens: number; requestId: string; note?: string; context?: Record<string, unknown> | null };

export type ReserveOutcome =
  | { kind: 'reserved' }
  | { kind: 'exists'; status: string; walletId: string; ownWalletId: string | null }
  | { kind: 'short'; balance: number; debt: number }
  | { kind: 'no-wallet' };

interface Row {
  reserved: string | null;
  wallet_id: string | null;
  balance: string | number | null;
  debt: string | number | null;
  existing_status: string | null;
  existing_wallet: string | null;
}

const RESERVE = `
  with taken as (
    update wallets set balance = balance - $3, updated_at = $5::timestamptz
    where owner_type = $1 and owner_id = $2 and balance >= $3 and debt = 0
      and not exists (select 1 from wallet_reservations where request_id = $4)
    returning id
  ), held as (
    insert into wallet_reservations (id, wallet_id, request_id, tokens, note, context, lease_until, created_at)
    select $6::uuid, id, $4, $3, $8, $9::text::jsonb, $10::timestamptz, $5::timestamptz from taken
    returning id
  ), moved as (
    insert into wallet_ledger (id, wallet_id, kind, amount, note, request_id, idempotency_key, created_at)
    select $7::uuid, id, 'USAGE', -$3::bigint, $8, $4, $11, $5::timestamptz from taken where $3::bigint > 0
  )
  select (select id from held) as reserved, w.id as wallet_id, w.balance, w.debt,
    r.status as existing_status, r.wallet_id as existing_wallet
  from (select 1) as one
  left join wallets w on w.owner_type = $1 and w.owner_id = $2
  left join wallet_reservations r on r.request_id = $4`;

/**
 * One round trip: the balance update is conditional (enough balance, no unpaid overrun, request id unused), and the
 * USAGE ledger row and the reservation are written from its result, so all three happen or none. The last select
 * reads the statement's starting snapshot: the wallet as it was, and any earlier reservation of this request id.
 * Constant text: prepared once per connection on PostgreSQL.
 */
async function runOnce(db: DbOrTx, input: ReserveRequest, now: Date, leaseSeconds: number): Promise<ReserveOutcome> {
  const owner = ownerKey(input);
  const values = [
    owner.ownerType,
    owner.ownerId,
    input.tokens,
    input.requestId,
    now.toISOString(),
    newId(),
    newId(),
    input.note ?? null,
    input.context ? JSON.stringify(input.context) : null,
    new Date(now.getTime() + leaseSeconds * 1000).toISOString(),
    `reserve:${input.requestId}`,
  ];
  // Not durable on its own commit (on PostgreSQL): the settlement or release that follows commits synchronously and,
  // the WAL being flushed in order, makes this hold durable too; a server crash before that loses both together.
  // Grouped with concurrent reserves and settlements (one commit for many): it locks only its owner's wallet.
  const row = (await runBound<Row>(db, bound(RESERVE, values), { asyncCommit: true, group: walletOrder(owner) })).rows[0]!;
  if (row.reserved) return { kind: 'reserved' };
  if (row.existing_status) return { kind: 'exists', status: row.existing_status, walletId: row.existing_wallet ?? '', ownWalletId: row.wallet_id };
  if (!row.wallet_id) return { kind: 'no-wallet' };
  return { kind: 'short', balance: Number(row.balance), debt: Number(row.debt) };
}

/**
 * Reserves, or says why not. A refusal read from a snapshot that still had room (another request took the tokens
 * in between) or a concurrent twin of this request id is decided again on fresh data.
 */
export async function reserveTokens(db: DbOrTx, input: ReserveRequest, now: Date, leaseSeconds: number): Promise<ReserveOutcome> {
  for (let attempt = 0; ; attempt++) {
    let outcome: ReserveOutcome;
    try {
      outcome = await runOnce(db, input, now, leaseSeconds);
    } catch (err) {
      if (attempt < 3 && isUniqueViolation(err, 'wallet_reservations_request_key')) continue;
      throw err;
    }
    const raced = outcome.kind === 'short' && outcome.debt === 0 && outcome.balance >= input.tokens;
    if (!raced || attempt >= 3) return outcome;
  }
}

/**
 * Raises an open reservation to `tokens` (a call moved to a dearer fallback model) in one statement: the wallet gives
 * the difference only while its balance covers it and it has no unpaid overrun, with its USAGE row (idempotent by
 * `reserve:<requestId>:<tokens>`). Returns whether the reservation now holds at least `tokens`.
 */
export async function growReservation(db: DbOrTx, input: { requestId: string; tokens: number; note?: string }, now: Date): Promise<boolean> {
  const at = now.toISOString();
  const result = await db.execute(sql`
    with open as (
      select r.id, r.wallet_id, ${input.tokens}::bigint - r.tokens as extra from wallet_reservations r
      where r.request_id = ${input.requestId} and r.status in ('OPEN', 'IN_FLIGHT')
    ), taken as (
      update wallets w set balance = w.balance - open.extra, updated_at = ${at}
      from open where w.id = open.wallet_id and open.extra > 0 and w.balance >= open.extra and w.debt = 0
      returning w.id, open.extra
    ), grown as (
      update wallet_reservations r set tokens = r.tokens + taken.extra from taken, open where r.id = open.id returning r.id
    ), moved as (
      insert into wallet_ledger (id, wallet_id, kind, amount, note, request_id, idempotency_key, created_at)
      select ${newId()}::uuid, taken.id, 'USAGE', -taken.extra, ${input.note ?? null}, ${input.requestId}, ${`reserve:${input.requestId}:${input.tokens}`}, ${at} from taken
    )
    select exists (select 1 from grown) or exists (select 1 from open where extra <= 0) as ok`);
  return (result as { rows: { ok: boolean }[] }).rows[0]!.ok;
}
