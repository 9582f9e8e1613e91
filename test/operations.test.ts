import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestApp, json, type TestApp } from './helpers/test-app.js';
import { compileAllValidators } from '../src/platform/http/validation.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ startJobs: true });
});
afterAll(async () => t?.close());

describe('operations endpoints', () => {
  it('/healthz answers while the process lives', async () => {
    const response = await t.app.inject({ url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ status: 'ok' });
  });

  it('/readyz checks the database and the job workers', async () => {
    const response = await t.app.inject({ url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ status: 'ready', checks: { database: 'ok', jobs: 'ok' } });
  });

  it('/metrics exposes Prometheus text with per-route request latency', async () => {
    await t.app.inject({ url: '/v1/auth/config' });
    const response = await t.app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/v1\/auth\/config",status_code="200"\} \d+/);
    expect(response.body).toContain('process_cpu_user_seconds_total');
  });

  it('tags every response with a request id, keeping a sane incoming one', async () => {
    const generated = await t.app.inject({ url: '/healthz' });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'lb-trace-12345678' } });
    expect(kept.headers['x-request-id']).toBe('lb-trace-12345678');
    const replaced = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers['x-request-id']).not.toBe('bad id with spaces');
  });

  it('serves OpenAPI 3.1 with the bearer scheme, and the committed document matches the code', async () => {
    const response = await t.app.inject({ url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = json(response);
    expect(document.openapi).toBe('3.1.0');
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.paths['/v1/auth/signup'].post.requestBody).toBeDefined();
    expect(document.paths['/v1/users/me'].get.security).toEqual([{ bearerAuth: [] }]);
    const committed = JSON.parse(await readFile(path.join(import.meta.dirname, '..', 'docs', 'openapi.json'), 'utf8'));
    expect(document, 'docs/openapi.json is out of date: run `npm run openapi` and commit it').toEqual(committed);
  });

  it('compiles every route validator (they compile on first use, so a schema Ajv refuses must fail here)', async () => {
    const compiled = compileAllValidators(t.app);
    expect(compiled).toBeGreaterThan(300);
    expect(compileAllValidators(t.app)).toBe(0);
  });

  it('answers malformed URLs and over-long path parameters in the envelope', async () => {
    const badEncoding = await t.app.inject({ url: '/v1/plans/%E0%A4%A' });
    expect(badEncoding.statusCode).toBe(400);
    expect(json(badEncoding).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('percent-encoding') });
    const tooLong = await t.app.inject({ url: `/v1/plans/${'x'.repeat(200)}` });
    expect(tooLong.statusCode).toBe(414);
    expect(json(tooLong).error.code).toBe('URI_TOO_LONG');
  });

  it('serves the docs page at /docs', async () => {
    const response = await t.app.inject({ url: '/docs/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/html/);
    expect(response.body).toMatch(/swagger/i);
  });

  it('answers a retryable 503 without internals when the database is gone, and /readyz reports it', async () => {
    const { accessToken } = json(
      await t.app.inject({ method: 'POST', url: '/v1/auth/signup', payload: { email: 'db-gone@example.com', password: 'long enough' } }),
    );
    await t.platform.jobs.stop();
    expect((await t.app.inject({ url: '/readyz' })).statusCode).toBe(503);
    await t.platform.database.close();
    const response = await t.app.inject({ url: '/v1/users/me', headers: { authorization: `Bearer ${accessToken}` } });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('2');
    expect(json(response).error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retryable: true, requestId: response.headers['x-request-id'] } });
    expect(response.body).not.toMatch(/select|users|pglite|postgres/i);
    const ready = await t.app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(json(ready).checks.database).toBe('unavailable');
  });
});
