// Community feeds at scale: 1M posts by 100k users on a fresh PostgreSQL database (bulk-inserted with generate_series),
// then a first page (limit 20) of the recent, trending and following feeds, signed in as 20 viewers who each follow 200
// authors and block or mute 10, at 1 and 50 connections, against GET /healthz on the same server. The target is a p99
// of 20 ms or less per feed page. It also times the trending recompute over the 1M posts and prints the query plans
// of the three feeds. PostgreSQL only (1M rows are not an embedded-database workload). BENCH_JSON=<file> writes the
// rows; BENCH_POSTS / BENCH_USERS change the scale.
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { prepareCustomers, serverEnv, BENCH_CUSTOMERS } from './customers.js';
import { BENCH_CONNECTIONS, createBenchDatabase, measure, printTable, startServer, writeJsonIfAsked, type BenchRow } from './lib.js';

const POSTS = Number(process.env.BENCH_POSTS ?? 1_000_000);
const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const FOLLOWS_PER_VIEWER = 200;
const HEALTH = 'GET /healthz';
const rows: BenchRow[] = [];

const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** Bulk data in plain SQL: ids are md5-derived uuids, so posts, generations and users line up without joins. */
async function seed(client: pg.Client, viewerIds: string[]): Promise<void> {
  let t0 = performance.now();
  await client.query(`
    insert into users (id, email, password_hash, name, handle, created_at, updated_at)
    select md5('u' || n)::uuid, 'u' || n || '@bench.local', 'x', 'User ' || n, 'bench_u' || n, now() - interval '400 days', now()
    from generate_series(1, ${USERS}) n`);
  console.log(`users: ${USERS} in ${seconds(t0)}`);
  t0 = performance.now();
  await client.query(`
    insert into generations (id, user_id, kind, prompt, output, visibility, created_at)
    select md5('g' || i)::uuid, md5('u' || (1 + i % ${USERS}))::uuid, 'IMAGE', 'prompt ' || i,
           jsonb_build_object('images', jsonb_build_array(jsonb_build_object('url', 'https://cdn.example.com/' || i || '.png', 'mimeType', 'image/png'))),
           'PUBLIC', now() - (i * interval '20 seconds')
    from generate_series(1, ${POSTS}) i`);
  console.log(`generations: ${POSTS} in ${seconds(t0)}`);
  t0 = performance.now();
  // One post every 20 seconds going back ~230 days; engagement skewed so trending has a real spread.
  await client.query(`
    insert into community_posts (id, author_id, generation_id, caption, tags, like_count, comment_count, view_count, share_count, remix_count, published_at, updated_at, deleted_at)
    select md5('p' || i)::uuid, md5('u' || (1 + i % ${USERS}))::uuid, md5('g' || i)::uuid, 'caption ' || i,
           array['tag' || (i % 50), 'topic' || (i % 7)],
           (random() ^ 4 * 500)::int, (random() ^ 4 * 80)::int, (random() ^ 3 * 5000)::int, (random() ^ 6 * 40)::int, (random() ^ 8 * 10)::int,
           now() - (i * interval '20 seconds'), now(), case when i % 97 = 0 then now() end
    from generate_series(1, ${POSTS}) i`);
  await client.query(`insert into community_post_scores (post_id, author_id) select id, author_id from community_posts`);
  console.log(`posts and their score rows: ${POSTS} (1 in 97 deleted) in ${seconds(t0)}`);
  t0 = performance.now();
  for (const [v, viewer] of viewerIds.entries()) {
    await client.query(
      `insert into community_follows (follower_id, followee_id) select $1, md5('u' || (1 + (k * 487 + $2 * 31) % ${USERS}))::uuid from generate_series(1, ${FOLLOWS_PER_VIEWER}) k on conflict do nothing`,
      [viewer, v],
    );
    await client.query(
      `insert into user_blocks (id, user_id, blocked_user_id, kind) select gen_random_uuid(), $1, md5('u' || (1 + (k * 487 + $2 * 31) % ${USERS}))::uuid, case when k % 2 = 0 then 'BLOCK' else 'MUTE' end from generate_series(${FOLLOWS_PER_VIEWER + 1}, ${FOLLOWS_PER_VIEWER + 10}) k`,
      [viewer, v],
    );
    await client.query(`insert into community_post_likes (post_id, user_id) select md5('p' || (k * 13 + $2))::uuid, $1 from generate_series(1, 100) k on conflict do nothing`, [viewer, v]);
  }
  await client.query('analyze');
  console.log(`follows, blocks and likes of ${viewerIds.length} viewers, analyze: ${seconds(t0)}`);
}

/** The feeds' first-page queries as the service sends them (see src/modules/community/feeds.ts), for EXPLAIN. */
async function explain(client: pg.Client, viewer: string): Promise<void> {
  const hidden = (await client.query<{ id: string }>(`select blocked_user_id as id from user_blocks where user_id = $1`, [viewer])).rows.map((r) => r.id);
  const listed = `deleted_at is null and hidden_at is null and author_id <> all($1::uuid[])`;
  const epoch = (await client.query<{ epoch: number }>('select epoch from community_trending_state where id = 1')).rows[0]?.epoch ?? 0;
  const score = epoch % 2 === 0 ? 'score_even' : 'score_odd';
  const trending = (after: string) =>
    `select p.*, s.${score} from community_post_scores s join community_posts p on p.id = s.post_id
     where p.deleted_at is null and p.hidden_at is null and s.author_id <> all($1::uuid[]) ${after}
     order by s.${score} desc, s.post_id desc limit 21`;
  const cursorScore = (await client.query<{ s: number }>(`select ${score} as s from community_post_scores order by ${score} desc offset 5000 limit 1`)).rows[0]!.s;
  const plans: Array<[string, string, unknown[]]> = [
    [
      'recent (with the score and like columns the service selects)',
      `select p.*, s.score_even, exists (select 1 from community_post_likes l where l.post_id = p.id and l.user_id = $2) as liked
       from community_posts p left join community_post_scores s on s.post_id = p.id
       where p.deleted_at is null and p.hidden_at is null and p.author_id <> all($1::uuid[]) order by p.published_at desc, p.id desc limit 21`,
      [hidden, viewer],
    ],
    ['recent, a page 7 days deep', `select * from community_posts where ${listed} and (published_at, id) < (now() - interval '7 days', 'ffffffff-ffff-ffff-ffff-ffffffffffff') order by published_at desc, id desc limit 21`, [hidden]],
    ['recent #tag7 (2% of posts)', `select * from community_posts where ${listed} and tags @> array['tag7'] order by published_at desc, id desc limit 21`, [hidden]],
    ['trending', trending(''), [hidden]],
    ['trending, a page 5000 rows deep', trending(`and (s.${score}, s.post_id) < ($2::double precision, 'ffffffff-ffff-ffff-ffff-ffffffffffff')`), [hidden, cursorScore]],
    [
      'following (per-followee keys from the author index, the newest 21, then those posts)',
      `select p.*, exists (select 1 from community_post_likes l where l.post_id = p.id and l.user_id = $2) as liked
       from (
         select c.id from community_follows f
         cross join lateral (
           select id, published_at from community_posts where deleted_at is null and hidden_at is null and author_id = f.followee_id
           order by published_at desc, id desc limit 21) c
         where f.follower_id = $2 and f.followee_id <> all($1::uuid[])
         order by c.published_at desc, c.id desc limit 21) newest
       join community_posts p on p.id = newest.id
       order by p.published_at desc, p.id desc`,
      [hidden, viewer],
    ],
  ];
  for (const [name, text, values] of plans) {
    const plan = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers, costs off) ${text}`, values);
    console.log(`\n--- ${name}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
}

const database = await createBenchDatabase('postgres', 'community_feeds');
try {
  const env = serverEnv(database);
  const viewers = await prepareCustomers(env, { count: BENCH_CUSTOMERS });
  const client = new pg.Client({ connectionString: database.env.DATABASE_URL });
  await client.connect();
  try {
    await seed(
      client,
      viewers.map((v) => v.userId),
    );
    // The real recompute (the 15-minute job's work) over every post, timed.
    const { app, services } = await buildApp(loadConfig(env), { startJobs: false });
    try {
      const t0 = performance.now();
      await services.community.feeds.recomputeTrending();
      console.log(`trending recompute over ${POSTS} posts: ${seconds(t0)}`);
    } finally {
      await app.close();
    }
    await client.query('vacuum analyze community_posts, community_post_scores');
    await explain(client, viewers[0]!.userId);
  } finally {
    await client.end();
  }

  const server = await startServer(env);
  try {
    const rotateHeaders = viewers.map((c) => ({ authorization: `Bearer ${c.accessToken}` }));
    const feeds = ['recent', 'trending', 'following'].map((name) => ({ name, url: `${server.url}/v1/community/feed/${name}?limit=20` }));
    for (const feed of feeds) {
      const probe = await fetch(feed.url, { headers: rotateHeaders[0] });
      const body = (await probe.json()) as { items?: unknown[] };
      if (probe.status !== 200 || body.items?.length !== 20) throw new Error(`${feed.url} answered ${probe.status} with ${body.items?.length} items`);
    }
    await measure('warm-up', 'postgres', { url: feeds[0]!.url, rotateHeaders, connections: 10, durationSeconds: 2 });
    for (const connections of BENCH_CONNECTIONS) {
      rows.push(await measure(HEALTH, 'postgres', { url: `${server.url}/healthz`, connections }));
      for (const feed of feeds) rows.push(await measure(`GET /v1/community/feed/${feed.name} (${viewers.length} viewers)`, 'postgres', { url: feed.url, rotateHeaders, connections }));
      rows.push(await measure('GET /v1/community/feed/recent?tag= (anonymous)', 'postgres', { url: `${server.url}/v1/community/feed/recent?limit=20&tag=tag7`, connections }));
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  } finally {
    await server.stop();
  }
} finally {
  await database.cleanup();
}

printTable(
  `Community feeds over ${POSTS} posts and ${USERS} users (first page, limit 20; target p99 <= 20 ms)`,
  rows,
  (r) => (r.target === HEALTH ? undefined : rows.find((h) => h.target === HEALTH && h.connections === r.connections)),
  'healthz',
);
await writeJsonIfAsked(rows);
