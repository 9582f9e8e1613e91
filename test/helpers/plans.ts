// The plans PostgreSQL makes for the statements the service really sends. A statement is captured as sent (text and
// values, `Database.observeStatements`), then prepared on a connection opened with the service's own settings and
// explained with EXPLAIN (FORMAT JSON) EXECUTE: a prepared statement goes through the same plan cache as the driver's
// unnamed statement (generic or custom by `plan_cache_mode`, first run custom under `auto`), where a plain EXPLAIN with
// parameters would always plan with the values and hide a generic plan.
import pg from 'pg';
import type { Database } from '../../src/platform/db/database.js';
import { serviceConnectionOptions } from '../../src/platform/db/database.js';

export interface SentStatement {
  text: string;
  values: unknown[];
}

/** One node of EXPLAIN's JSON. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Plan Rows': number;
  'Total Cost': number;
  Plans?: PlanNode[];
  [key: string]: unknown;
}

/** The SELECTs the service sends while `fn` runs (writes, transaction control and settings are left out). */
export async function selectsSentDuring(database: Database, fn: () => Promise<unknown>): Promise<SentStatement[]> {
  if (!database.observeStatements) throw new Error('statement capture needs the PostgreSQL database (TEST_DATABASE_URL)');
  const seen: SentStatement[] = [];
  const stop = database.observeStatements((statement) => {
    if (/^\s*(select|with)\b/i.test(statement.text)) seen.push(statement);
  });
  try {
    await fn();
  } finally {
    stop();
  }
  return seen;
}

/** A value as the SQL literal node-postgres would send as text: strings, numbers, booleans, dates, arrays, JSON. */
function literal(client: pg.Client, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) return client.escapeLiteral(value.toISOString());
  if (Array.isArray(value)) {
    const items = value.map((item) => (item === null ? 'NULL' : `"${String(item).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`));
    return client.escapeLiteral(`{${items.join(',')}}`);
  }
  if (typeof value === 'object') return client.escapeLiteral(JSON.stringify(value));
  return client.escapeLiteral(typeof value === 'string' ? value : JSON.stringify(value));
}

/** A connection with the service's settings (and `extraOptions` after them), to explain statements on. */
export async function planConnection(
  url: string,
  extraOptions = '',
): Promise<{ explain(statement: SentStatement): Promise<PlanNode>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url, options: `${serviceConnectionOptions(url)} ${extraOptions}`.trim() });
  await client.connect();
  return {
    async explain({ text, values }) {
      await client.query(`prepare plan_probe as ${text}`);
      try {
        const args = values.length > 0 ? `(${values.map((v) => literal(client, v)).join(', ')})` : '';
        const result = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (format json) execute plan_probe${args}`);
        return result.rows[0]!['QUERY PLAN'][0]!.Plan;
      } finally {
        await client.query('deallocate plan_probe');
      }
    },
    close: () => client.end(),
  };
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** The tables a plan reads, with the node types reading them. */
export const tablesRead = (plan: PlanNode): string[] =>
  nodesOf(plan).flatMap((n) => (n['Relation Name'] ? [`${n['Node Type']} on ${n['Relation Name']}`] : []));

/** The most rows a page of a list may come to (limits go to 100; a batch by ids to a page's worth). */
export const PAGE_ROWS = 1000;

/**
 * What makes a list statement grow with the table instead of the page: a sequential scan of a large table, a sort of
 * more rows than a page, a parallel plan, or an estimate of more rows than a page (the planner did not know the LIMIT,
 * as in a generic plan). Empty when the plan is index-served. `maxSortRows`: for a statement whose sort is bounded by
 * something other than the page (the following feed sorts a page per followee).
 */
export function planProblems(plan: PlanNode, largeTables: ReadonlySet<string>, maxSortRows = PAGE_ROWS): string[] {
  const problems: string[] = [];
  if (plan['Plan Rows'] > PAGE_ROWS) problems.push(`expects ${plan['Plan Rows']} rows, more than a page (a LIMIT it does not know?)`);
  for (const node of nodesOf(plan)) {
    const type = node['Node Type'];
    if (type === 'Seq Scan' && node['Relation Name'] && largeTables.has(node['Relation Name']))
      problems.push(`reads all of ${node['Relation Name']} (Seq Scan)`);
    if ((type === 'Sort' || type === 'Incremental Sort') && (node.Plans?.[0]?.['Plan Rows'] ?? 0) > maxSortRows)
      problems.push(`sorts ${node.Plans![0]!['Plan Rows']} rows (${String(node['Sort Key'])})`);
    if (type === 'Gather' || type === 'Gather Merge') problems.push(`runs in parallel (${type}): its estimate is a large part of a table`);
  }
  return problems;
}
