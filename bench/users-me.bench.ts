// GET /v1/users/me (authenticated: JWT verify + one user query) against GET /healthz on the same server.
import { load, report, signUpForBench, startServer } from './lib.js';

const databaseUrl = process.env.DATABASE_URL;
const server = await startServer(databaseUrl ? { DATABASE_URL: databaseUrl } : {});
try {
  const accessToken = await signUpForBench(server.url);
  // warm-up, so JIT and connection pools are in their steady state
  await load('warm-up', { url: `${server.url}/v1/users/me`, headers: { authorization: `Bearer ${accessToken}` }, durationSeconds: 2 });
  const health = await load('GET /healthz', { url: `${server.url}/healthz` });
  const me = await load('GET /v1/users/me', { url: `${server.url}/v1/users/me`, headers: { authorization: `Bearer ${accessToken}` } });
  report(`Authenticated read vs health probe (${databaseUrl ? 'PostgreSQL' : 'embedded PGlite'})`, [health, me], health);
} finally {
  await server.stop();
}
