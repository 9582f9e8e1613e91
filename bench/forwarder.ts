// The in-run reference of bench/gateway.bench.ts: a bare Fastify + undici forwarder in its own process. It takes the
// gateway's request shape, sends it to the same fake upstream as an OpenAI chat completion and answers the text and
// usage: what a gateway costs with no accounts, wallet or database. Prints its base URL on stdout once it listens.
// With FLOOR_DATABASE_URL (PostgreSQL) it is the second reference, the floor of metering: around each call it runs the
// two round trips the metered path is allowed, as prepared statements on a wallet of 20: one to reserve (a hold row
// and the wallet's balance, committed without waiting for the WAL flush, as the service does) and one durable one to
// settle (the hold closed, the balance moved, a usage row). No auth, no caches, no history, no events.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { Pool } from 'undici';

const upstreamBaseUrl = process.env.UPSTREAM_BASE_URL;
if (!upstreamBaseUrl) throw new Error('UPSTREAM_BASE_URL is required');
const upstream = new URL(upstreamBaseUrl);
const pool = new Pool(upstream.origin, { connections: 128, pipelining: 1 });
const completionsPath = `${upstream.pathname.replace(/\/$/, '')}/chat/completions`;

interface TextBody {
  model: string;
  messages: { role: string; content: string }[];
  maxTokens?: number;
}

const floorUrl = process.env.FLOOR_DATABASE_URL;
const FLOOR_WALLETS = 20;
const durable = floorUrl ? new pg.Pool({ connectionString: floorUrl, max: 10 }) : null;
const quick = floorUrl ? new pg.Pool({ connectionString: floorUrl, max: 4, options: '-c synchronous_commit=off' }) : null;
if (durable) {
  await durable.query(`
    create table if not exists bench_floor_wallets (id int primary key, balance bigint not null, reserved bigint not null default 0);
    create table if not exists bench_floor_holds (request_id uuid primary key, wallet_id int not null, tokens bigint not null);
    create table if not exists bench_floor_usage (request_id uuid primary key, tokens bigint not null, at timestamptz not null default now());
    insert into bench_floor_wallets (id, balance) select g, 1000000000000 from generate_series(1, ${FLOOR_WALLETS}) g on conflict do nothing;`);
}
const RESERVE = {
  name: 'floor_reserve',
  text: `with w as (update bench_floor_wallets set balance = balance - $2, reserved = reserved + $2 where id = $1 and balance >= $2 returning id)
    insert into bench_floor_holds (request_id, wallet_id, tokens) select $3, id, $2 from w returning request_id`,
};
const SETTLE = {
  name: 'floor_settle',
  text: `with h as (delete from bench_floor_holds where request_id = $1 returning wallet_id, tokens),
    w as (update bench_floor_wallets set reserved = reserved - h.tokens, balance = balance + h.tokens - $2 from h where id = h.wallet_id returning id)
    insert into bench_floor_usage (request_id, tokens) select $1, $2 from w`,
};
let nextWallet = 0;

async function metered<T extends { usage: { inputTokens: number; outputTokens: number } }>(call: () => Promise<T>): Promise<T> {
  if (!durable || !quick) return call();
  const requestId = randomUUID();
  const reserved = await quick.query({ ...RESERVE, values: [(nextWallet++ % FLOOR_WALLETS) + 1, 1_000, requestId] });
  if (reserved.rowCount !== 1) throw new Error('the floor wallet is short');
  const answer = await call();
  await durable.query({ ...SETTLE, values: [requestId, answer.usage.inputTokens + answer.usage.outputTokens] });
  return answer;
}

const app = Fastify({ logger: false });
app.post<{ Body: TextBody }>('/v1/ai/text', (request) => metered(() => forward(request.body)));

async function forward(body: TextBody) {
  const response = await pool.request({
    method: 'POST',
    path: completionsPath,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.UPSTREAM_API_KEY ?? 'sk-bench'}` },
    body: JSON.stringify({ model: body.model.split('/').pop(), messages: body.messages, max_completion_tokens: body.maxTokens }),
  });
  const completion = (await response.body.json()) as {
    choices: { message: { content: string }; finish_reason: string }[];
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  return {
    text: completion.choices[0]?.message.content ?? '',
    usage: { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens },
    finishReason: completion.choices[0]?.finish_reason ?? 'stop',
  };
}

const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ baseUrl: address })}\n`);
const stop = () => void Promise.all([app.close(), pool.close(), durable?.end(), quick?.end()]).then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
