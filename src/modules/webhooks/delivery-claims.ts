import { sql } from 'drizzle-orm';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { bound, runBound } from '../../platform/db/bound.js';
import { UNDISPATCHED_EVENTS_EXIST } from '../../platform/events/outbox.js';

/** How long a claimed delivery waits for its job before another instance may claim it again (the job expires too). */
const LEASE_MS = 60_000;
const CLAIMS_PER_BATCH = 200;

export interface ClaimedDelivery {
  id: string;
  claim: string;
}

/** Deliveries of active webhooks that are due by $1 (PENDING and due, or SENDING with a lapsed lease), as `d`. */
const DUE_DELIVERIES_OF_ACTIVE_WEBHOOKS = `
  from webhook_deliveries d
  join webhook_endpoints w on w.id = d.webhook_id and w.status = 'ACTIVE'
  where d.status in ('PENDING', 'SENDING') and d.due_at <= $1::timestamptz`;

const WORK_WAITING = `select ${UNDISPATCHED_EVENTS_EXIST} as events, exists (select 1 ${DUE_DELIVERIES_OF_ACTIVE_WEBHOOKS}) as due`;

/** Whether a round has anything to do: outbox events to fan out, or deliveries of active webhooks due by `clock`. */
export async function workWaiting({ db, clock }: { db: Db; clock: Clock }): Promise<{ events: boolean; due: boolean }> {
  const { rows } = await runBound<{ events: boolean; due: boolean }>(db, bound(WORK_WAITING, [clock.now().toISOString()]));
  return { events: rows[0]?.events === true, due: rows[0]?.due === true };
}

// One per webhook, oldest first, skipping webhooks with an attempt out ($1 now, $2 the lease's end, $3 the batch).
const CLAIM_DUE = `
  with due as (
    select distinct on (d.webhook_id) d.id
    ${DUE_DELIVERIES_OF_ACTIVE_WEBHOOKS}
      and not exists (
        select 1 from webhook_deliveries busy
        where busy.webhook_id = d.webhook_id and busy.status = 'SENDING' and busy.due_at > $1::timestamptz)
    order by d.webhook_id, d.due_at, d.id
  )
  update webhook_deliveries d
  set status = 'SENDING', claim = gen_random_uuid()::text, due_at = $2::timestamptz, updated_at = $1::timestamptz
  from (select id from due limit $3) c
  where d.id = c.id and d.status in ('PENDING', 'SENDING') and d.due_at <= $1::timestamptz
  returning d.id, d.claim`;

/** The claim lock for the rest of `tx`: one instance claims at a time; false when another holds it. */
async function takeClaimLock(tx: DbOrTx): Promise<boolean> {
  const lock = await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('webhooks:claim')) as locked`);
  return (lock as { rows: Array<{ locked: boolean }> }).rows[0]?.locked === true;
}

/**
 * Claims due deliveries (PENDING and due, or SENDING with a lapsed lease) of active webhooks that have no attempt in
 * flight, one per webhook, and returns them. One instance claims at a time (advisory lock).
 */
export async function claimDueDeliveries({ db, clock }: { db: Db; clock: Clock }): Promise<ClaimedDelivery[]> {
  return db.transaction(async (tx) => {
    if (!(await takeClaimLock(tx))) return [];
    const now = clock.now().toISOString();
    const leaseUntil = new Date(clock.now().getTime() + LEASE_MS).toISOString();
    const { rows } = await runBound<ClaimedDelivery>(tx, bound(CLAIM_DUE, [now, leaseUntil, CLAIMS_PER_BATCH]));
    return rows;
  });
}

/**
 * Claims the next due delivery of one webhook, unless it has an attempt out or a round is claiming (then the
 * round takes it). Lets the worker that just delivered go on with the same webhook without a queue round trip.
 */
export async function claimNextDelivery({ db, clock }: { db: Db; clock: Clock }, webhookId: string): Promise<ClaimedDelivery | null> {
  return db.transaction(async (tx) => {
    if (!(await takeClaimLock(tx))) return null;
    const now = clock.now().toISOString();
    const leaseUntil = new Date(clock.now().getTime() + LEASE_MS).toISOString();
    const result = await tx.execute(sql`
      update webhook_deliveries d
      set status = 'SENDING', claim = gen_random_uuid()::text, due_at = ${leaseUntil}::timestamptz, updated_at = ${now}::timestamptz
      where d.id = (
          select n.id from webhook_deliveries n
          where n.webhook_id = ${webhookId} and n.status = 'PENDING' and n.due_at <= ${now}::timestamptz
          order by n.due_at, n.id limit 1)
        and d.status = 'PENDING'
        and not exists (
          select 1 from webhook_deliveries busy
          where busy.webhook_id = ${webhookId} and busy.status = 'SENDING' and busy.due_at > ${now}::timestamptz)
        and exists (select 1 from webhook_endpoints w where w.id = ${webhookId} and w.status = 'ACTIVE')
      returning d.id, d.claim`);
    return (result as { rows: Array<{ id: string; claim: string }> }).rows[0] ?? null;
  });
}
