import type { SQLWrapper } from 'drizzle-orm';
import { bound, isBound, runBound, shiftPlaceholders, toBound, type BoundSql } from './bound.js';
import type { DbOrTx } from './database.js';
import { withSqlState } from './errors.js';

/** One write of a combined statement: a data-modifying query, readable by the later parts as the CTE `name`. */
export interface StatementPart {
  name: string;
  /** Bound SQL (the hot parts: constant text) or a Drizzle query (built per call). */
  query: BoundSql | SQLWrapper;
}

/** SQLSTATE of `require_that` (migration 0012): the statement's condition did not hold. */
const CONDITION_FAILED = 'P0004';

/** A combined statement whose condition did not hold: it wrote nothing. */
export class StatementConditionFailed extends Error {}

type Piece = BoundSql | SQLWrapper;

/**
 * Combined texts, found by walking the names and then the pieces' texts: the hot parts' texts are constants whose
 * hashes V8 keeps, so finding a shape joined before costs a few map lookups and no string building.
 */
interface TextNode {
  next: Map<string, TextNode>;
  text?: string;
}
let joined: TextNode = { next: new Map() };
let joinedCount = 0;
const MAX_JOINED = 1_000;

function join(names: string[], pieces: BoundSql[], hasCondition: boolean): string {
  let offset = 0;
  const shifted = pieces.map((piece) => {
    const moved = shiftPlaceholders(piece.text, offset);
    offset += piece.values.length;
    return moved;
  });
  const ctes = names.map((name, i) => `"${name}" as (${shifted[i]})`).join(', ');
  const rest = shifted.slice(names.length);
  const selected = hasCondition ? `require_that(${rest[0]}, ${rest[1]}) as "conditionHeld", ${rest[2]}` : rest[0];
  return `with ${ctes} select ${selected}`;
}

function combine(names: string[], pieces: BoundSql[], hasCondition: boolean): BoundSql {
  let node = joined;
  for (const step of [...names, hasCondition ? '\u0000condition' : '\u0000none', ...pieces.map((p) => p.text)]) {
    let child = node.next.get(step);
    if (!child) {
      child = { next: new Map() };
      node.next.set(step, child);
    }
    node = child;
  }
  if (node.text === undefined) {
    if (++joinedCount > MAX_JOINED) {
      joined = { next: new Map() };
      joinedCount = 0;
      return combine(names, pieces, hasCondition);
    }
    node.text = join(names, pieces, hasCondition);
  }
  const values: unknown[] = [];
  for (const piece of pieces) for (const value of piece.values) values.push(value);
  return bound(node.text, values);
}

/**
 * Sends writes that several modules prepared as ONE statement of data-modifying CTEs: one round trip, and they commit
 * together or not at all. Every part runs (PostgreSQL runs a data-modifying CTE whether or not it is read); then the
 * `condition`, SQL over the parts' RETURNING rows, must hold, or the whole statement fails and writes nothing
 * (StatementConditionFailed; inside a transaction, that aborts the transaction). A unique violation of any part counts
 * the same way: the caller then takes its general path, which handles what the shortcut did not expect. Returns the
 * row `select` describes. Bound parts cost no query building: the joined text is kept per shape (and prepared once per
 * connection on PostgreSQL).
 */
export async function writeAsOneStatement<R extends Record<string, unknown>>(
  db: DbOrTx,
  parts: StatementPart[],
  options: { condition?: { holds: Piece; message: string }; select: Piece; group?: string },
): Promise<R> {
  const asBound = (piece: Piece) => (isBound(piece) ? piece : toBound(piece));
  const pieces = parts.map((part) => asBound(part.query));
  if (options.condition) pieces.push(asBound(options.condition.holds), bound('$1::text', [options.condition.message]));
  pieces.push(asBound(options.select));
  const statement = combine(
    parts.map((part) => part.name),
    pieces,
    options.condition !== undefined,
  );
  try {
    return (await runBound<R>(db, statement, { group: options.group })).rows[0]!;
  } catch (err) {
    const failed = withSqlState(err, CONDITION_FAILED) ?? withSqlState(err, '23505');
    if (failed) throw new StatementConditionFailed(failed.message, { cause: err });
    throw err;
  }
}
