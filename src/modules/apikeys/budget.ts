import { sql } from 'drizzle-orm';
import type { KeyBudgetPeriod } from '../../db/schema/apikeys.js';
import { bound, runBound, shiftPlaceholders } from '../../platform/db/bound.js';
import type { DbOrTx } from '../../platform/db/database.js';
import type { StatementPart } from '../../platform/db/one-statement.js';
import { AppError } from '../../platform/http/errors.js';
import { startOfUtcDay, startOfUtcMonth } from '../../platform/clock/clock.js';

const EPOCH = new Date(0);

/** The start of the budget period `now` falls in (UTC day or month; the epoch for `total`). */
export function periodStartOf(period: KeyBudgetPeriod, now: Date): Date {
  if (period === 'day') return startOfUtcDay(now);
  if (period === 'month') return startOfUtcMonth(now);
  return EPOCH;
}

/** When the period `now` falls in ends; null for `total`, which never resets. */
export function periodEndOf(period: KeyBudgetPeriod, now: Date): Date | null {
  if (period === 'day') return new Date(startOfUtcDay(now).getTime() + 24 * 60 * 60 * 1000);
  if (period === 'month') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return null;
}

export interface BudgetHold {
  apiKeyId: string;
  requestId: string;
  tokens: number;
  budget: { tokens: number; period: KeyBudgetPeriod };
}

/**
 * Holds `tokens` of the key's budget for one call, in one statement: the period's counter is created or raised only
 * while spent + reserved + tokens stays within the budget (ON CONFLICT ... DO UPDATE ... WHERE re-checks the locked,
 * latest row, so parallel calls can never pass the budget together), and the hold is written from its result. A
 * request id that already holds is not counted twice. Refused with 429 KEY_BUDGET_EXCEEDED.
 */
export async function holdBudget(db: DbOrTx, hold: BudgetHold, now: Date): Promise<void> {
  const start = periodStartOf(hold.budget.period, now).toISOString();
  const result = await db.execute(sql`
    with counted as (
      insert into api_key_spend as s (api_key_id, period_start, spent, reserved)
      select ${hold.apiKeyId}::uuid, ${start}::timestamptz, 0, ${hold.tokens}::bigint
      where ${hold.tokens}::bigint <= ${hold.budget.tokens}::bigint and not exists (select 1 from api_key_budget_holds where request_id = ${hold.requestId})
      on conflict (api_key_id, period_start) do update set reserved = s.reserved + excluded.reserved
      where s.spent + s.reserved + excluded.reserved <= ${hold.budget.tokens}::bigint
      returning 1
    ), held as (
      insert into api_key_budget_holds (request_id, api_key_id, period_start, tokens, created_at)
      select ${hold.requestId}, ${hold.apiKeyId}::uuid, ${start}::timestamptz, ${hold.tokens}::bigint, ${now.toISOString()}::timestamptz from counted
      returning 1
    )
    select (select count(*) from held)::int as held,
      exists (select 1 from api_key_budget_holds where request_id = ${hold.requestId}) as replay,
      (select spent + reserved from api_key_spend where api_key_id = ${hold.apiKeyId} and period_start = ${start}::timestamptz) as used`);
  const row = (result as { rows: { held: number; replay: boolean; used: string | number | null }[] }).rows[0]!;
  if (row.held > 0 || row.replay) return;
  throw budgetExceeded(hold, Number(row.used ?? 0), now);
}

function budgetExceeded(hold: BudgetHold, spentTokens: number, now: Date): AppError {
  const resetsAt = periodEndOf(hold.budget.period, now);
  return new AppError(
    429,
    'KEY_BUDGET_EXCEEDED',
    `This API key's ${hold.budget.period === 'total' ? 'total' : `${hold.budget.period}ly`} budget of ${hold.budget.tokens.toLocaleString('en-US')} tokens cannot cover this call ` +
      `(${spentTokens.toLocaleString('en-US')} spent or held, ${hold.tokens.toLocaleString('en-US')} needed). ` +
      (resetsAt ? `It resets at ${resetsAt.toISOString()}; ` : '') +
      'the key owner can raise it with PATCH /v1/account/api-keys/{id}.',
    { budgetTokens: hold.budget.tokens, spentTokens, resetsAt: resetsAt?.toISOString() ?? null },
  );
}

/**
 * Raises a call's hold to `tokens` (it moved to a dearer fallback model), within the budget, in one statement; the
 * hold's own period is the one raised. Never lowers a hold (the settlement does that at the real cost).
 */
export async function growBudgetHold(db: DbOrTx, hold: BudgetHold, now: Date): Promise<void> {
  const result = await db.execute(sql`
    with h as (
      select tokens, period_start from api_key_budget_holds where request_id = ${hold.requestId}
    ), counted as (
      update api_key_spend s set reserved = s.reserved + (${hold.tokens}::bigint - h.tokens)
      from h where s.api_key_id = ${hold.apiKeyId} and s.period_start = h.period_start and ${hold.tokens}::bigint > h.tokens
        and s.spent + s.reserved + (${hold.tokens}::bigint - h.tokens) <= ${hold.budget.tokens}::bigint
      returning 1
    ), held as (
      update api_key_budget_holds set tokens = ${hold.tokens}::bigint where request_id = ${hold.requestId} and exists (select 1 from counted) returning 1
    )
    select exists (select 1 from held) or exists (select 1 from h where tokens >= ${hold.tokens}::bigint) as ok,
      (select s.spent + s.reserved from api_key_spend s, h where s.api_key_id = ${hold.apiKeyId} and s.period_start = h.period_start) as used`);
  const row = (result as { rows: { ok: boolean; used: string | number | null }[] }).rows[0]!;
  if (!row.ok) throw budgetExceeded(hold, Number(row.used ?? 0), now);
}

/**
 * The call's hold closed at its real cost (0 when refunded), as parts of the caller's settling statement: deleting the
 * hold is the guard, so it moves reserved to spent exactly once whichever path (settle, refund, sweep) gets there.
 */
const RELEASE_HOLD = 'delete from api_key_budget_holds where request_id = $1 returning api_key_id, period_start, tokens';
const SPEND_HELD = `
  update api_key_spend s set reserved = greatest(s.reserved - h.tokens, 0), spent = s.spent + $1::bigint
  from key_budget_released h where s.api_key_id = h.api_key_id and s.period_start = h.period_start`;

export function budgetSettlementParts(requestId: string, chargedTokens: number): StatementPart[] {
  return [
    { name: 'key_budget_released', query: bound(RELEASE_HOLD, [requestId]) },
    { name: 'key_budget_spent', query: bound(SPEND_HELD, [chargedTokens]) },
  ];
}

const SETTLE_ALONE = `with key_budget_released as (${RELEASE_HOLD}) ${shiftPlaceholders(SPEND_HELD, 1)}`;

/**
 * Tokens charged after the call's hold was closed (the sweeper closed the reservation while the call still ran, and its
 * delivered answer was charged late): counted as spent in the key's current period, past the budget if need be, since
 * they are spent already.
 */
export async function spendLate(db: DbOrTx, apiKeyId: string, period: KeyBudgetPeriod, tokens: number, now: Date): Promise<void> {
  if (tokens <= 0) return;
  const start = periodStartOf(period, now).toISOString();
  await db.execute(sql`
    insert into api_key_spend as s (api_key_id, period_start, spent, reserved) values (${apiKeyId}::uuid, ${start}::timestamptz, ${tokens}::bigint, 0)
    on conflict (api_key_id, period_start) do update set spent = s.spent + excluded.spent`);
}

/** The same, on its own (inside the caller's transaction). */
export async function settleBudget(db: DbOrTx, requestId: string, chargedTokens: number): Promise<void> {
  await runBound(db, bound(SETTLE_ALONE, [requestId, chargedTokens]));
}
