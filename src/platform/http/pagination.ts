import { and, desc, getTableColumns, sql, type AnyColumn, type InferSelectModel, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../db/database.js';
import { badRequest } from './errors.js';

/** A keyset position: the sort value of the last row returned and its id (the tie-breaker). */
export interface CursorPosition {
  sort: string | number;
  id: string;
}

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.sort, position.id])).toString('base64url');
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && ['string', 'number'].includes(typeof value[0]) && typeof value[1] === 'string') {
      return { sort: value[0] as string | number, id: value[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw badRequest('The cursor is not valid. Use the nextCursor value from the previous page, or omit it to start over.', {
    field: 'query.cursor',
  });
}

/**
 * The WHERE condition for "rows after this cursor" in a newest-first listing ordered by (sortColumn desc, id desc).
 * Dates travel as ISO strings inside the cursor.
 */
export function afterCursor(sortColumn: AnyColumn, idColumn: AnyColumn, cursor: string | undefined, extra?: SQL): SQL | undefined {
  if (!cursor) return extra;
  const position = decodeCursor(cursor);
  const sortValue = sortColumn.dataType === 'date' ? new Date(String(position.sort)) : position.sort;
  if (sortValue instanceof Date && Number.isNaN(sortValue.getTime())) throw badRequest('The cursor is not valid.');
  const condition = sql`(${sortColumn}, ${idColumn}) < (${sortValue instanceof Date ? sortValue.toISOString() : sortValue}, ${position.id})`;
  return extra ? and(extra, condition) : condition;
}

/**
 * Cuts a result fetched with `limit + 1` rows into a page; the extra row only proves there is a next page.
 */
export function toPage<T>(rows: T[], limit: number, positionOf: (row: T) => CursorPosition): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(positionOf(last)) : null };
}

export interface PageQuery {
  limit: number;
  cursor?: string | undefined;
}

/** The columns of `table` a newest-first listing can sort by: its dates and numbers. */
type SortKey<TTable extends PgTable> = {
  [K in keyof InferSelectModel<TTable> & string]: InferSelectModel<TTable>[K] extends Date | number ? K : never;
}[keyof InferSelectModel<TTable> & string];

/**
 * One page of the rows of `table` that match `where`, newest first by (`sortBy` desc, `id` desc): every column of
 * each row, read as `limit + 1` rows after the cursor.
 */
export async function newestFirstPage<TTable extends PgTable & { id: AnyColumn }>(
  db: DbOrTx,
  table: TTable,
  sortBy: SortKey<TTable>,
  where: SQL | undefined,
  query: PageQuery,
): Promise<{ items: InferSelectModel<TTable>[]; nextCursor: string | null }> {
  const sortColumn = (getTableColumns(table) as Record<string, AnyColumn>)[sortBy]!;
  const idColumn = table.id;
  const source: PgTable = table; // drizzle's `from` cannot check a generic table
  const rows = (await db
    .select()
    .from(source)
    .where(afterCursor(sortColumn, idColumn, query.cursor, where))
    .orderBy(desc(sortColumn), desc(idColumn))
    .limit(query.limit + 1)) as InferSelectModel<TTable>[];
  return toPage(rows, query.limit, (row) => {
    const fields = row as Record<string, unknown>;
    const sort = fields[sortBy] as Date | number;
    return { sort: sort instanceof Date ? sort.toISOString() : sort, id: fields.id as string };
  });
}
