import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { usageRecords } from '../src/db/schema/usage.js';
import { startFakeOpenAi, tokensOf, type Decide, type FakeUpstream } from './helpers/fake-upstreams.js';
import { startFakeProvider } from './helpers/fakes/openai-compatible.js';
import { createApiKey, providerEnv, setPlan } from './helpers/gateway.js';
import { startOtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { bearer, createTestApp, json, signUp, signUpAs } from './helpers/test-app.js';

/**
 * OpenTelemetry traces, exported by the real OTLP/HTTP exporter to an in-test collector, and `Server-Timing` on every
 * gateway surface. Tracing is process-wide, so the apps here run one after another: with the GenAI content off (the
 * default), then with it on. Tracing off is test/server-timing.test.ts.
 */
const SERVER = 2;
const CLIENT = 3;
const PARENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN = '00f067aa0ba902b7';
const traceparent = `00-${PARENT_TRACE}-${PARENT_SPAN}-01`;
const FALLBACK = 'groq/meta-llama/llama-4-scout-17b-16e-instruct';
const question = 'What is the capital of France? My key is sk-live-abcdefghijklmnopqrstuvwx.';

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let openai: FakeUpstream;
let groq: FakeUpstream;
let decideOpenAi: Decide = () => ({ kind: 'ok', text: 'Paris.' });

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  openai = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  groq = await startFakeProvider('groq', () => ({ kind: 'ok', text: 'Served by the fallback.' }));
});
afterAll(async () => {
  await openai?.close();
  await groq?.close();
  await receiver?.close();
});

async function startApp(extra: Record<string, string>, startJobs = false) {
  const t = await createTestApp({
    startJobs,
    env: { ...providerEnv('OPENAI', openai.baseUrl, ['sk-trace-openai-1']), ...providerEnv('GROQ', groq.baseUrl, ['gsk_trace_groq_1']), ...extra },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'pro');
  const key = await createApiKey(t, signed.accessToken, ['ai:text', 'ai:image']);
  const call = (path: string, body: unknown, headers: Record<string, string> = {}) => post(`${base}${path}`, body, { ...bearer(key.key), ...headers });
  return { t, call, accessToken: signed.accessToken };
}

/**
 * A POST through node:http, which no instrumentation here traces: the caller is another process's business (fetch would
 * be traced by this process's undici instrumentation and send its own traceparent).
 */
function post(url: string, body: unknown, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: { get(name: string): string | null }; text(): Promise<string>; json(): Promise<any> }>((resolve, reject) => {
    const payload = JSON.stringify(body);
    const request = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const header = (name: string) => {
            const value = response.headers[name.toLowerCase()];
            return value === undefined ? null : String(value);
          };
          resolve({ status: response.statusCode ?? 0, headers: { get: header }, text: async () => text, json: async () => JSON.parse(text) });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** The span of `name` in the trace of `requestId`'s server span. */
async function spansOf(requestId: string) {
  await receiver.flush();
  const server = receiver.spans.find((span) => span.kind === SERVER && span.attributes['storefront.request_id'] === requestId);
  expect(server, `a server span for request ${requestId}`).toBeDefined();
  return { server: server!, all: receiver.trace(server!.traceId) };
}
const named = (spans: ReceivedSpan[], prefix: string) => spans.filter((span) => span.name.startsWith(prefix));
/** The outgoing HTTP calls under `parent` (on PostgreSQL, statements are its children too). */
const httpCalls = (parent: ReceivedSpan) => receiver.children(parent).filter((span) => span.attributes['http.request.method'] !== undefined);
const timingNames = (header: string | null) => (header ?? '').split(',').map((entry) => entry.trim().split(';')[0]);

describe('tracing on, message content off (the default)', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  beforeAll(async () => {
    app = await startApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'storefront-under-test' }, true);
  });
  afterAll(async () => app?.t.close());

  it("a metered text call: server span under the caller's traceparent, a GenAI chat span with the upstream's usage, the upstream HTTP call under it", async () => {
    const response = await app.call(
      '/v1/ai/text',
      { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }], maxTokens: 50, temperature: 0.3 },
      { traceparent },
    );
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(timingNames(response.headers.get('server-timing'))).toEqual(['auth', 'route', 'reserve', 'upstream', 'settle']);

    const { server, all } = await spansOf(response.headers.get('x-request-id')!);
    expect(server).toMatchObject({ traceId: PARENT_TRACE, parentSpanId: PARENT_SPAN, name: 'POST /v1/ai/text' });
    expect(server.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/ai/text', 'http.response.status_code': 200 });
    const [chat] = named(all, 'chat ');
    expect(chat).toMatchObject({ name: 'chat openai/gpt-4o-mini', kind: CLIENT, parentSpanId: server.spanId });
    const upstream = openai.calls().at(-1)!;
    expect(chat!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'openai/gpt-4o-mini',
      'gen_ai.request.max_tokens': 50,
      'gen_ai.request.temperature': 0.3,
      'gen_ai.response.model': 'gpt-4o-mini',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': body.usage.inputTokens,
      'gen_ai.usage.output_tokens': tokensOf('Paris.'),
      'storefront.tokens_charged': body.usage.creditsConsumed,
      'storefront.reservation_id': body.requestId,
    });
    expect(upstream.body.model).toBe('gpt-4o-mini');
    expect(chat!.attributes).not.toHaveProperty('gen_ai.input.messages');
    expect(chat!.attributes).not.toHaveProperty('gen_ai.output.messages');
    // The official undici instrumentation: the upstream call, a child of the chat span, its traceparent sent on.
    const [http] = httpCalls(chat!);
    expect(http).toMatchObject({ kind: CLIENT, name: 'POST' });
    expect(http!.attributes).toMatchObject({ 'server.address': '127.0.0.1', 'http.response.status_code': 200 });
    expect(String(upstream.headers.traceparent)).toContain(`-${http!.spanId}-`);
    expect(String(upstream.headers.traceparent)).toContain(PARENT_TRACE);
    // On PostgreSQL the official pg instrumentation adds the statements (the embedded database has no wire to trace).
    const statements = all.filter((span) => span.attributes['db.system'] === 'postgresql' || span.attributes['db.system.name'] === 'postgresql');
    if (process.env.TEST_DATABASE_URL) {
      expect(statements.length).toBeGreaterThan(0);
      expect(statements.every((span) => all.some((parent) => parent.spanId === span.parentSpanId))).toBe(true);
    } else expect(statements).toEqual([]);
  });

  it('a streamed call: Server-Timing with the first byte, the rest in the usage record, the span ended with the usage', async () => {
    const response = await app.call('/openai/v1/chat/completions', {
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: question }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.status).toBe(200);
    expect(timingNames(response.headers.get('server-timing'))).toEqual(['auth', 'route', 'reserve', 'upstream-ttfb']);
    const text = await response.text();
    expect(text).toContain('data: [DONE]');
    const requestId = response.headers.get('x-ai-request-id')!;
    const [record] = await app.t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
    const timing = (record!.metadata as { timing: Record<string, number> }).timing;
    expect(Object.keys(timing).sort()).toEqual(['auth', 'reserve', 'route', 'upstream', 'upstream-ttfb']);
    expect(timing.upstream).toBeGreaterThanOrEqual(timing['upstream-ttfb']!);

    const { server, all } = await spansOf(response.headers.get('x-request-id')!);
    expect(server.name).toBe('POST /openai/v1/chat/completions');
    const [chat] = named(all, 'chat ');
    expect(chat!.parentSpanId).toBe(server.spanId);
    expect(chat!.attributes).toMatchObject({
      'gen_ai.usage.output_tokens': tokensOf('Paris.'),
      'storefront.tokens_charged': record!.tokensConsumed,
      'gen_ai.response.finish_reasons': ['stop'],
    });
  });

  it('a tool call: the finish reason says so', async () => {
    decideOpenAi = () => ({ kind: 'ok', text: '', toolCalls: [{ id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' }] });
    try {
      const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
      const response = await app.call('/openai/v1/chat/completions', {
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools,
      });
      expect(response.status).toBe(200);
      expect((await response.json()).choices[0].finish_reason).toBe('tool_calls');
      const [chat] = named((await spansOf(response.headers.get('x-request-id')!)).all, 'chat ');
      expect(chat!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool_calls']);
    } finally {
      decideOpenAi = () => ({ kind: 'ok', text: 'Paris.' });
    }
  });

  it("a fallback: one chat span naming both models, a failed upstream call and the fallback's under it", async () => {
    const operator = (await signUpAs(app.t, 'SUPER_ADMIN')).accessToken;
    const id = async (slug: string) => (await app.t.services.catalog.getBySlug(slug))!.row.id;
    const set = await app.t.app.inject({
      method: 'PUT',
      url: `/v1/admin/models/${await id('openai/gpt-4o-mini')}/fallbacks`,
      headers: bearer(operator),
      payload: { fallbacks: [FALLBACK], reason: 'trace test' },
    });
    expect(set.statusCode, set.body).toBe(200);
    decideOpenAi = () => ({ kind: 'error', status: 503, message: 'overloaded' });
    try {
      const response = await app.call('/v1/ai/text', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      expect(response.status).toBe(200);
      expect((await response.json()).model).toBe(FALLBACK);
      const [chat] = named((await spansOf(response.headers.get('x-request-id')!)).all, 'chat ');
      expect(chat!.attributes).toMatchObject({
        'storefront.fallback.from': 'openai/gpt-4o-mini',
        'storefront.fallback.to': FALLBACK,
        'gen_ai.provider.name': 'groq',
        'gen_ai.response.model': 'meta-llama/llama-4-scout-17b-16e-instruct',
      });
      const statuses = httpCalls(chat!).map((span) => span.attributes['http.response.status_code']);
      expect(statuses).toEqual([503, 200]);
    } finally {
      decideOpenAi = () => ({ kind: 'ok', text: 'Paris.' });
      await app.t.app.inject({
        method: 'PUT',
        url: `/v1/admin/models/${await id('openai/gpt-4o-mini')}/fallbacks`,
        headers: bearer(operator),
        payload: { fallbacks: [], reason: 'trace test' },
      });
    }
  });

  it('an image job: its generate_content span continues the trace of the request that queued it', async () => {
    const response = await app.call(
      '/v1/ai/image',
      { model: 'local/image', prompt: 'a quiet harbour', count: 2, width: 64, height: 64, async: true },
      { traceparent },
    );
    expect(response.status).toBe(200);
    const { jobId } = await response.json();
    expect(timingNames(response.headers.get('server-timing'))).toContain('auth');
    let job: any;
    for (let i = 0; i < 300 && job?.status !== 'SUCCEEDED'; i++) {
      job = json(await app.t.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(app.accessToken) }));
      if (job.status !== 'SUCCEEDED') await new Promise((resolve) => setImmediate(resolve));
    }
    expect(job.status).toBe('SUCCEEDED');
    const { server } = await spansOf(response.headers.get('x-request-id')!);
    // The job is SUCCEEDED a moment before its span ends (the span ends once the settlement committed).
    let span: ReceivedSpan | undefined;
    for (let i = 0; i < 100 && !span; i++) {
      await receiver.flush();
      span = receiver.spans.find((s) => s.name === 'generate_content local/image' && s.attributes['storefront.job_id'] === jobId);
      if (!span) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(span).toMatchObject({ traceId: PARENT_TRACE, parentSpanId: server.spanId });
    expect(span!.attributes).toMatchObject({
      'gen_ai.operation.name': 'generate_content',
      'storefront.images_generated': 2,
      'storefront.job_id': jobId,
      'storefront.tokens_charged': job.creditsConsumed,
    });
  });
});

describe('tracing on, message content opted in', () => {
  it('records the prompt and the answer on the chat span, with credentials masked', async () => {
    const app = await startApp({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces`,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    });
    try {
      const response = await app.call('/v1/ai/text', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] });
      expect(response.status).toBe(200);
      const [chat] = named((await spansOf(response.headers.get('x-request-id')!)).all, 'chat ');
      const input = String(chat!.attributes['gen_ai.input.messages']);
      expect(input).toContain('What is the capital of France?');
      expect(input).toContain('[redacted]');
      expect(input).not.toContain('sk-live-abcdefghijklmnopqrstuvwx');
      expect(JSON.parse(String(chat!.attributes['gen_ai.output.messages']))).toEqual({ text: 'Paris.' });
    } finally {
      await app.t.close();
    }
  });
});
