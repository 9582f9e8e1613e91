import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { ProxyTracerProvider, trace } from '@opentelemetry/api';
import { usageRecords } from '../src/db/schema/usage.js';
import { createApiKey, setPlan } from './helpers/gateway.js';
import { createTestApp, signUp, type TestApp } from './helpers/test-app.js';

/**
 * `Server-Timing` on every gateway surface, with tracing off (no OTLP endpoint, as every other test runs): the JSON
 * answers name every phase; a stream names what is known by its first byte, and its usage record keeps the rest.
 */
let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await createTestApp();
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'pro');
  key = (await createApiKey(t, signed.accessToken, ['ai:text', 'ai:image', 'ai:embed', 'ai:video'])).key;
});
afterAll(async () => t?.close());

const phases = (header: string | string[] | number | undefined) =>
  String(header ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [name, duration] = entry.split(';dur=');
      expect(Number(duration), entry).toBeGreaterThanOrEqual(0);
      return name;
    });

const WHOLE = ['auth', 'route', 'reserve', 'upstream', 'settle'];
const FIRST_BYTE = ['auth', 'route', 'reserve', 'upstream-ttfb'];
const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${key}`, ...headers }, payload: payload as Record<string, unknown> });
const text = [{ role: 'user', content: 'Say hi.' }];

describe('Server-Timing', () => {
  it.each([
    ['POST /v1/ai/text', '/v1/ai/text', { model: 'local/text', messages: text }],
    ['POST /openai/v1/chat/completions', '/openai/v1/chat/completions', { model: 'local/text', messages: text }],
    ['POST /openai/v1/responses', '/openai/v1/responses', { model: 'local/text', input: 'Say hi.' }],
    ['POST /anthropic/v1/messages', '/anthropic/v1/messages', { model: 'local/text', max_tokens: 50, messages: text }],
    [
      'POST /gemini/v1beta/models/{model}:generateContent',
      '/gemini/v1beta/models/local/text:generateContent',
      { contents: [{ parts: [{ text: 'Say hi.' }] }] },
    ],
    ['POST /v1/ai/embeddings', '/v1/ai/embeddings', { model: 'local/embed', input: ['hello'] }],
    ['POST /openai/v1/embeddings', '/openai/v1/embeddings', { model: 'local/embed', input: 'hello' }],
    ['POST /v1/ai/image', '/v1/ai/image', { model: 'local/image', prompt: 'a harbour', width: 64, height: 64 }],
    ['POST /openai/v1/images/generations', '/openai/v1/images/generations', { model: 'local/image', prompt: 'a harbour', size: '256x256' }],
  ])('%s names every phase of a whole answer', async (_name, url, body) => {
    const response = await post(url, body);
    expect(response.statusCode, response.body).toBe(200);
    expect(phases(response.headers['server-timing'])).toEqual(WHOLE);
  });

  it.each([
    ['POST /v1/ai/text', '/v1/ai/text', { model: 'local/text', messages: text, stream: true }],
    ['POST /openai/v1/chat/completions', '/openai/v1/chat/completions', { model: 'local/text', messages: text, stream: true }],
    ['POST /openai/v1/responses', '/openai/v1/responses', { model: 'local/text', input: 'Say hi.', stream: true }],
    ['POST /anthropic/v1/messages', '/anthropic/v1/messages', { model: 'local/text', max_tokens: 50, messages: text, stream: true }],
    [
      'POST /gemini/v1beta/models/{model}:streamGenerateContent',
      '/gemini/v1beta/models/local/text:streamGenerateContent?alt=sse',
      { contents: [{ parts: [{ text: 'Say hi.' }] }] },
    ],
  ])('%s streamed: the phases known by the first byte, the whole upstream time in the usage record', async (_name, url, body) => {
    const response = await post(url, body);
    expect(response.statusCode, response.body).toBe(200);
    expect(phases(response.headers['server-timing'])).toEqual(FIRST_BYTE);
    const requestId = String(response.headers['x-ai-request-id']);
    const [record] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
    const timing = (record!.metadata as { timing?: Record<string, number> }).timing!;
    expect(Object.keys(timing).sort()).toEqual(['auth', 'reserve', 'route', 'upstream', 'upstream-ttfb']);
    expect(timing.upstream).toBeGreaterThanOrEqual(timing['upstream-ttfb']!);
  });

  it.each([
    ['POST /v1/ai/image (async)', '/v1/ai/image', { model: 'local/image', prompt: 'a harbour', width: 64, height: 64, async: true }],
    ['POST /v1/ai/video', '/v1/ai/video', { model: 'local/video', prompt: 'a harbour', durationSeconds: 1 }],
  ])('%s, a job: the checks and the commit that stores and queues it', async (_name, url, body) => {
    const response = await post(url, body);
    expect(response.statusCode, response.body).toBe(200);
    expect(phases(response.headers['server-timing'])).toEqual(['auth', 'route', 'queue']);
  });

  it('a refused call names the phases it went through; an Idempotency-Key replay only its own', async () => {
    const refused = await post('/v1/ai/text', { model: 'local/nope', messages: text });
    expect(refused.statusCode).toBe(404);
    expect(phases(refused.headers['server-timing'])).toEqual(['auth']);
    const first = await post('/v1/ai/text', { model: 'local/text', messages: text }, { 'idempotency-key': 'timing-replay' });
    expect(phases(first.headers['server-timing'])).toEqual(WHOLE);
    const replay = await post('/v1/ai/text', { model: 'local/text', messages: text }, { 'idempotency-key': 'timing-replay' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(phases(replay.headers['server-timing'])).toEqual(['auth']);
  });

  it('tracing off: no tracer provider, no span processor, no server spans', () => {
    const provider = trace.getTracerProvider();
    expect(provider).toBeInstanceOf(ProxyTracerProvider);
    // No SDK behind the API: its no-op provider, whose spans record nothing.
    expect((provider as ProxyTracerProvider).getDelegate().constructor.name).toBe('NoopTracerProvider');
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);
    expect(t.app.hasRequestDecorator('span')).toBe(false);
  });
});
