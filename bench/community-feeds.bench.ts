// Community feeds at scale: 1M posts by 100k users on a fresh PostgreSQL database (test/helpers/community-scale.ts,
// the seed the plan guard uses at 100k), then the first page (limit 20) of every feed (recent, recent by tag, trending,
// following, a user's posts, remixes, the gallery by date and by stars), signed in as 20 viewers who each follow 200
// authors and block or mute 10, at 1 and 50 connections, measured in turns with GET /healthz on the same server. The
// targets: a p99 of 20 ms or less at 1 connection, and at 50 connections no error and at least 3% of /healthz's req/s.
// It also times the trending recompute over the 1M posts and prints the plan of every statement each feed sends, as the
// service sends it (captured from the service, explained through the plan cache on a connection with its settings).
// PostgreSQL only. BENCH_JSON=<file> writes the rows; BENCH_POSTS / BENCH_USERS change the scale.
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { seedCommunity } from '../test/helpers/community-scale.js';
import { planConnection, planProblems, selectsSentDuring, tablesRead } from '../test/helpers/plans.js';
import { prepareCustomers, serverEnv, BENCH_CUSTOMERS } from './customers.js';
import { BENCH_CONNECTIONS, createBenchDatabase, measureInterleaved, printTable, startServer, writeJsonIfAsked, type BenchRow } from './lib.js';

const POSTS = Number(process.env.BENCH_POSTS ?? 1_000_000);
const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const HEALTH = 'GET /healthz';
const LARGE_TABLES = new Set([
  'users',
  'generations',
  'community_posts',
  'community_post_scores',
  'community_works',
  'community_post_likes',
  'community_follows',
]);
const rows: BenchRow[] = [];

/** Each feed's first page; `signedIn` feeds rotate over the viewers' tokens. */
const FEEDS: Array<{ name: string; path: string; signedIn: boolean; maxSortRows?: number }> = [
  { name: 'recent, signed in', path: '/v1/community/feed/recent', signedIn: true },
  { name: 'recent #tag7, anonymous', path: '/v1/community/feed/recent?tag=tag7', signedIn: false },
  { name: 'recent #tag7, signed in', path: '/v1/community/feed/recent?tag=tag7', signedIn: true },
  { name: 'trending, signed in', path: '/v1/community/feed/trending', signedIn: true },
  { name: 'following, signed in', path: '/v1/community/feed/following', signedIn: true, maxSortRows: 200 * 21 },
  { name: "a user's posts (100k of them), signed in", path: '/v1/community/users/scale_u1/posts', signedIn: true },
  { name: 'remixes of a post, signed in', path: `/v1/community/posts/REMIXED/remixes`, signedIn: true },
  { name: 'gallery, recent, signed in', path: '/v1/community/works', signedIn: true },
  { name: 'gallery, top, anonymous', path: '/v1/community/works?sort=top', signedIn: false },
];

const withLimit = (path: string) => `${path}${path.includes('?') ? '&' : '?'}limit=20`;
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

const database = await createBenchDatabase('postgres', 'community_feeds');
try {
  const env = serverEnv(database);
  const viewers = await prepareCustomers(env, { count: BENCH_CUSTOMERS });
  const client = new pg.Client({ connectionString: database.env.DATABASE_URL });
  await client.connect();
  let remixed: string;
  try {
    await seedCommunity(client, { posts: POSTS, users: USERS, viewerIds: viewers.map((v) => v.userId), followsPerViewer: 200 }, (line) => console.log(line));
    remixed = (await client.query<{ id: string }>(`select md5('p' || 1)::uuid as id`)).rows[0]!.id;
  } finally {
    await client.end();
  }
  const feeds = FEEDS.map((feed) => ({ ...feed, path: withLimit(feed.path.replace('REMIXED', remixed)) }));

  // In process: the real recompute (the 15-minute job's work) over every post, timed; then each feed once, with the
  // plans of what it sent.
  const { app, platform, services } = await buildApp(loadConfig(env), { startJobs: false });
  try {
    const t0 = performance.now();
    await services.community.feeds.recomputeTrending();
    console.log(`trending recompute over ${POSTS} posts: ${seconds(t0)}`);
    // As autovacuum leaves tables in service: hint bits set, visibility maps for index-only scans, statistics; and no
    // autovacuum of the fresh million-row tables running during the measurement.
    await platform.database.query('vacuum analyze');
    const plans = await planConnection(database.env.DATABASE_URL!);
    try {
      for (const feed of feeds) {
        const headers = feed.signedIn ? { authorization: `Bearer ${viewers[0]!.accessToken}` } : {};
        const sent = await selectsSentDuring(platform.database, () => app.inject({ method: 'GET', url: feed.path, headers }));
        console.log(`\n--- ${feed.name}: ${sent.length} statements`);
        for (const statement of sent) {
          const plan = await plans.explain(statement);
          const problems = planProblems(plan, LARGE_TABLES, feed.maxSortRows);
          console.log(
            `  ${problems.length > 0 ? 'PROBLEM ' + problems.join('; ') : 'ok'}: ${tablesRead(plan).join(', ') || '(no table)'} (est. ${plan['Plan Rows']} rows, cost ${plan['Total Cost']})`,
          );
        }
      }
    } finally {
      await plans.close();
    }
  } finally {
    await app.close();
  }

  const server = await startServer(env);
  try {
    const rotateHeaders = viewers.map((c) => ({ authorization: `Bearer ${c.accessToken}` }));
    for (const feed of feeds) {
      const probe = await fetch(`${server.url}${feed.path}`, { headers: feed.signedIn ? rotateHeaders[0] : {} });
      const body = (await probe.json()) as { items?: unknown[] };
      if (probe.status !== 200 || body.items?.length !== 20) throw new Error(`${feed.path} answered ${probe.status} with ${body.items?.length} items`);
    }
    for (const connections of BENCH_CONNECTIONS) {
      rows.push(
        ...(await measureInterleaved('postgres', connections, [
          { target: HEALTH, options: { url: `${server.url}/healthz` } },
          ...feeds.map((feed) => ({ target: `GET ${feed.name}`, options: { url: `${server.url}${feed.path}`, ...(feed.signedIn ? { rotateHeaders } : {}) } })),
        ])),
      );
    }
  } finally {
    await server.stop();
  }
} finally {
  await database.cleanup();
}

printTable(
  `Community feeds over ${POSTS} posts and ${USERS} users (first page, limit 20; targets: p99 <= 20 ms at 1 connection, >= 3% of healthz at 50)`,
  rows,
  (r) => (r.target === HEALTH ? undefined : rows.find((h) => h.target === HEALTH && h.connections === r.connections)),
  'healthz',
);
await writeJsonIfAsked(rows);
