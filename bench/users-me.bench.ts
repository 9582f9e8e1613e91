// GET /v1/users/me (signed in: the user and their active subscription with its usage) against GET /healthz on the same
// server, with the access tokens of 20 customers, at 1 and 50 connections, on embedded PGlite and on a fresh
// PostgreSQL database. BENCH_JSON=<file> writes the rows; BENCH_CPU_PROF=<dir> profiles the service.
import { BENCH_CUSTOMERS, prepareCustomers, serverEnv } from './customers.js';
import { BENCH_CONNECTIONS, forEachDatabase, measure, measureInterleaved, printTable, startServer, writeJsonIfAsked, type BenchRow } from './lib.js';

const HEALTH = 'GET /healthz';
const ME = `GET /v1/users/me (${BENCH_CUSTOMERS} customers)`;
const rows: BenchRow[] = [];

await forEachDatabase('users_me', async (database) => {
  const env = serverEnv(database);
  const customers = await prepareCustomers(env);
  const server = await startServer(env);
  try {
    const me = { url: `${server.url}/v1/users/me`, rotateHeaders: customers.map((c) => ({ authorization: `Bearer ${c.accessToken}` })) };
    const probe = await fetch(me.url, { headers: me.rotateHeaders[0] });
    if (probe.status !== 200) throw new Error(`/v1/users/me answered ${probe.status}: ${await probe.text()}`);
    await measure('warm-up', database.kind, { ...me, connections: 10, durationSeconds: 2 });
    for (const connections of BENCH_CONNECTIONS) {
      rows.push(
        ...(await measureInterleaved(database.kind, connections, [
          { target: HEALTH, options: { url: `${server.url}/healthz` } },
          { target: ME, options: me },
        ])),
      );
    }
    // Requests autocannon abandoned at the end of its run finish before the server stops.
    await new Promise((resolve) => setTimeout(resolve, 500));
  } finally {
    await server.stop();
  }
});

printTable(
  'Signed-in read vs the health probe',
  rows,
  (r) => (r.target === HEALTH ? undefined : rows.find((h) => h.target === HEALTH && h.database === r.database && h.connections === r.connections)),
  'healthz',
);
await writeJsonIfAsked(rows);
