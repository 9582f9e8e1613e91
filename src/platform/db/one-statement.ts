import { sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { DbOrTx } from './database.js';
import { withSqlState } from './errors.js';

/** One write of a combined statement: a data-modifying query, readable by the later parts as the CTE `name`. */
export interface StatementPart {
  name: string;
  query: SQLWrapper;
}

/** SQLSTATE of `require_that` (migration 0012): the statement's condition did not hold. */
const CONDITION_FAILED = 'P0004';

/** A combined statement whose condition did not hold: it wrote nothing. */
export class StatementConditionFailed extends Error {}

/**
 * Sends writes that several modules prepared as ONE statement of data-modifying CTEs: one round trip, and they commit
 * together or not at all. Every part runs (PostgreSQL runs a data-modifying CTE whether or not it is read); then the
 * `condition`, SQL over the parts' RETURNING rows, must hold, or the whole statement fails and writes nothing
 * (StatementConditionFailed; inside a transaction, that aborts the transaction). A unique violation of any part counts
 * the same way: the caller then takes its general path, which handles what the shortcut did not expect. Returns the
 * row `select` describes.
 */
export async function writeAsOneStatement<R extends Record<string, unknown>>(
  db: DbOrTx,
  parts: StatementPart[],
  options: { condition?: { holds: SQL; message: string }; select: SQL },
): Promise<R> {
  const ctes = sql.join(
    parts.map((part) => sql`${sql.identifier(part.name)} as (${part.query.getSQL()})`),
    sql`, `,
  );
  const condition = options.condition ? sql`require_that(${options.condition.holds}, ${options.condition.message}) as "conditionHeld", ` : sql``;
  try {
    const result = await db.execute(sql`with ${ctes} select ${condition}${options.select}`);
    return (result as { rows: R[] }).rows[0]!;
  } catch (err) {
    const failed = withSqlState(err, CONDITION_FAILED) ?? withSqlState(err, '23505');
    if (failed) throw new StatementConditionFailed(failed.message, { cause: err });
    throw err;
  }
}
