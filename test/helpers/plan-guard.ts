// The plan guard of test/plans/*: request a route through app.inject, explain every SELECT it sent as sent (see
// plans.ts) and list what would make it grow with the table instead of the page. PostgreSQL only.
import { expect } from 'vitest';
import { planConnection, planProblems, selectsSentDuring, tablesRead } from './plans.js';
import { json, type TestApp } from './test-app.js';

export interface GuardOptions {
  /** For a statement whose sort is bounded by something other than the page (see planProblems). */
  maxSortRows?: number;
}

/** The page size the guard asks for. */
const PAGE = 20;

export interface PlanGuard {
  /** Requests `url` (200 expected) and returns the problems of every SELECT it sent, each with its statement and the tables its plan reads. */
  problemsOf(url: string, headers?: Record<string, string>, options?: GuardOptions): Promise<{ problems: string[]; body: any }>;
  /** The first page and the page after it: both index-served, both full. */
  expectIndexServed(url: string, headers?: Record<string, string>, options?: GuardOptions): Promise<void>;
  /** A route that is not paged (a summary, a bounded listing): index-served; returns its body. */
  expectStatementsIndexServed(url: string, headers?: Record<string, string>, options?: GuardOptions): Promise<any>;
  close(): Promise<void>;
}

const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;

export async function openPlanGuard(t: TestApp, largeTables: ReadonlySet<string>): Promise<PlanGuard> {
  const plans = await planConnection(t.platform.config.databaseUrl!);

  async function problemsOf(url: string, headers: Record<string, string> = {}, options: GuardOptions = {}) {
    let response!: Awaited<ReturnType<TestApp['app']['inject']>>;
    const sent = await selectsSentDuring(t.platform.database, async () => {
      response = await t.app.inject({ method: 'GET', url, headers });
    });
    expect(response.statusCode, `${url}: ${response.body}`).toBe(200);
    expect(sent.length).toBeGreaterThan(0);
    // A statement sent once per row (a lookup per item) is reported once, with its count.
    const problems = new Map<string, number>();
    for (const statement of sent) {
      const plan = await plans.explain(statement);
      for (const problem of planProblems(plan, largeTables, options.maxSortRows)) {
        const report = `${url}: ${problem}\n  in: ${statement.text.slice(0, 600)}\n  reads: ${tablesRead(plan).join(', ')}`;
        problems.set(report, (problems.get(report) ?? 0) + 1);
      }
    }
    return { problems: [...problems].map(([report, times]) => (times > 1 ? `${report}\n  (sent ${times} times)` : report)), body: json(response) };
  }

  return {
    problemsOf,

    async expectIndexServed(url, headers = {}, options = {}) {
      const first = await problemsOf(withQuery(url, `limit=${PAGE}`), headers, options);
      expect(first.body.nextCursor, `${url}: a full first page has a next one`).toEqual(expect.any(String));
      const next = await problemsOf(withQuery(url, `limit=${PAGE}&cursor=${encodeURIComponent(first.body.nextCursor)}`), headers, options);
      // Both pages' problems at once: the report shows every statement that fails, not the first.
      expect([...first.problems, ...next.problems]).toEqual([]);
      expect(first.body.items).toHaveLength(PAGE);
      expect(next.body.items).toHaveLength(PAGE);
    },

    async expectStatementsIndexServed(url, headers = {}, options = {}) {
      const { problems, body } = await problemsOf(url, headers, options);
      expect(problems).toEqual([]);
      return body;
    },

    close: () => plans.close(),
  };
}
