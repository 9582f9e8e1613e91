import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../test/helpers/rejection.js';
import { collect, collectUntilError, messages, textOf } from '../../../../test/helpers/text-streams.js';
import { startFakeAnthropic } from './anthropic/anthropic.fake.js';
import { startFakeOpenAi, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { countMessageTokens, countTextTokens } from '../text/tokens.js';
import { createAnthropicAdapter, toAnthropicMessages } from './anthropic/text.js';
import { createLocalProvider } from './local/text.js';
import { createOpenAiAdapter } from './openai-compatible/adapter.js';
import { UpstreamError, type ProviderAdapter, type UpstreamCredential } from './types.js';

// The provider adapters end to end: the built-in local provider, and the OpenAI-compatible and Anthropic adapters
// against fake upstreams. The OpenAI-compatible client's own HTTP and SSE handling is tested in openai-compatible/http.test.ts.

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('local provider', () => {
  const local = createLocalProvider();
  const credential: UpstreamCredential = { accountId: 'local', providerSlug: 'local', apiKey: null, baseUrl: null, timeoutMs: 1000 };

  it('answers deterministically with real token counts', async () => {
    const a = await local.generateText(credential, { model: 'local-text', messages, maxTokens: 2048 });
    const b = await local.generateText(credential, { model: 'local-text', messages, maxTokens: 2048 });
    const other = await local.generateText(credential, {
      model: 'local-text',
      messages: [{ role: 'user', content: 'Explain tides to a child' }],
      maxTokens: 2048,
    });
    expect(a).toEqual(b);
    expect(a.text).not.toBe(other.text);
    expect(a.text).toContain('lighthouses');
    expect(a.finishReason).toBe('stop');
    expect(a.usage).toEqual({ inputTokens: countMessageTokens(messages), outputTokens: countTextTokens(a.text) });
    expect(a.usage!.outputTokens).toBeGreaterThan(10);
  });

  it('stops at maxTokens with finish reason length', async () => {
    const result = await local.generateText(credential, { model: 'local-text', messages, maxTokens: 5 });
    expect(result.finishReason).toBe('length');
    expect(result.usage!.outputTokens).toBeLessThanOrEqual(5);
    expect(countTextTokens(result.text)).toBe(result.usage!.outputTokens);
  });

  it('streams the same text piece by piece, then usage, then finish', async () => {
    const sync = await local.generateText(credential, { model: 'local-text', messages, maxTokens: 2048 });
    const events = await collect(await local.streamText(credential, { model: 'local-text', messages, maxTokens: 2048 }));
    expect(events.filter((e) => e.type === 'text').length).toBeGreaterThan(5);
    expect(textOf(events)).toBe(sync.text);
    expect(events.at(-2)).toEqual({ type: 'usage', usage: sync.usage });
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
  });

  it('can be cancelled midway', async () => {
    const stream = await local.streamText(credential, { model: 'local-text', messages, maxTokens: 2048 });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    stream.abort();
    const error = await upstreamError(iterator.next());
    expect(error.kind).toBe('aborted');
  });

  it.each(['image', 'video', 'audio.speech', 'audio.music', 'audio.sfx', 'text'])('follows the enhancement instruction for %s', async (target) => {
    const result = await local.generateText(credential, {
      model: 'local-multimodal',
      messages: [
        { role: 'system', content: `You improve prompts for the target "${target}". Reply with the prompt only.` },
        { role: 'user', content: 'a cat on a windowsill' },
      ],
      maxTokens: 2048,
    });
    expect(result.text.toLowerCase()).toContain('cat on a windowsill');
    expect(result.text.length).toBeGreaterThan('a cat on a windowsill'.length);
  });
});

describe('OpenAI-compatible adapter against a fake upstream', () => {
  let fake: FakeUpstream;
  let adapter: ProviderAdapter;
  let credential: UpstreamCredential;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
    adapter = createOpenAiAdapter({ defaultBaseUrl: 'http://unused.invalid/v1', streamIdleTimeoutMs: 300 });
    credential = { accountId: 'acc-1', providerSlug: 'openai', apiKey: 'sk-test-1', baseUrl: fake.baseUrl, timeoutMs: 2000 };
  });
  afterAll(async () => fake?.close());

  it('sends the chat request with the key and returns text, usage and finish reason', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'Lighthouses guide ships.' }));
    const result = await adapter.generateText(credential, { model: 'gpt-fake', messages, maxTokens: 64, temperature: 0.2 });
    expect(result).toEqual({
      text: 'Lighthouses guide ships.',
      usage: { inputTokens: expect.any(Number), outputTokens: countTextTokens('Lighthouses guide ships.') },
      finishReason: 'stop',
    });
    const call = fake.calls().at(-1)!;
    expect(call.apiKey).toBe('sk-test-1');
    expect(call.body).toMatchObject({ model: 'gpt-fake', messages, max_tokens: 64, temperature: 0.2 });
    expect(call.body.stream).toBe(false);
  });

  it('uses max_completion_tokens when configured (OpenAI itself)', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'ok' }));
    const openai = createOpenAiAdapter({ defaultBaseUrl: fake.baseUrl, tokenLimitParam: 'max_completion_tokens' });
    await openai.generateText({ ...credential, baseUrl: null }, { model: 'gpt-fake', messages, maxTokens: 32 });
    expect(fake.calls().at(-1)!.body).toMatchObject({ max_completion_tokens: 32 });
    expect(fake.calls().at(-1)!.body.max_tokens).toBeUndefined();
  });

  it('streams deltas and asks for the final usage', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'one two three four five', usage: { inputTokens: 17, outputTokens: 5 } }));
    const events = await collect(await adapter.streamText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(fake.calls().at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(textOf(events)).toBe('one two three four five');
    expect(events.filter((e) => e.type === 'text').length).toBe(5);
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { inputTokens: 17, outputTokens: 5 } },
      { type: 'finish', finishReason: 'stop' },
    ]);
  });

  it('reports no usage when the server sends none (the gateway then counts)', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'no usage here', usage: 'none' }));
    const events = await collect(await adapter.streamText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(events.some((e) => e.type === 'usage')).toBe(false);
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    fake.decide(() => ({ kind: 'ok', text: 'no usage here', usage: 'none' }));
    const sync = await adapter.generateText(credential, { model: 'gpt-fake', messages, maxTokens: 64 });
    expect(sync.usage).toBeNull();
  });

  it.each([
    [401, 'auth', 'invalid_api_key'],
    [403, 'model_refused', 'model_not_found'],
    [404, 'model_not_found', 'model_not_found'],
    [429, 'rate_limit', 'rate_limit_exceeded'],
    [500, 'server', 'server_error'],
    [503, 'server', 'server_error'],
    [400, 'bad_request', 'invalid_request_error'],
  ])('classifies HTTP %i as %s, sync and streamed', async (status, kind, code) => {
    fake.decide(() => ({ kind: 'error', status }));
    const sync = await upstreamError(adapter.generateText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(sync).toMatchObject({ kind, status, code });
    expect(sync.message.length).toBeGreaterThan(5);
    const streamed = await upstreamError(adapter.streamText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(streamed).toMatchObject({ kind, status });
  });

  it('treats a 403 that is not about a model as a key problem', async () => {
    fake.decide(() => ({
      kind: 'error',
      status: 403,
      body: { error: { message: 'You are not allowed to sample from this project.', type: 'invalid_request_error', code: null, param: null } },
    }));
    const error = await upstreamError(adapter.generateText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(error.kind).toBe('auth');
  });

  it('times out an upstream that never answers', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    const error = await upstreamError(adapter.generateText({ ...credential, timeoutMs: 200 }, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(error.kind).toBe('timeout');
  });

  it('reports a connection failure as a network error', async () => {
    const error = await upstreamError(
      adapter.generateText({ ...credential, accountId: 'dead', baseUrl: 'http://127.0.0.1:1/v1' }, { model: 'gpt-fake', messages, maxTokens: 64 }),
    );
    expect(error.kind).toBe('network');
  });

  it.each([
    ['an in-stream error event', 'error-event', 'server'],
    ['a dropped connection', 'disconnect', 'network'],
    ['a clean close without a finish reason', 'close', 'server'],
  ] as const)('ends a stream broken by %s with an error after the delivered text', async (_label, how, kind) => {
    fake.decide(() => ({ kind: 'midway', text: 'alpha beta gamma delta epsilon', afterChunks: 2, how }));
    const { events, error } = await collectUntilError(await adapter.streamText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(textOf(events)).toBe('alpha beta ');
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe(kind);
    expect(events.some((e) => e.type === 'finish')).toBe(false);
  });

  it('reports a stalled stream as a timeout', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'slow words here', chunkDelayMs: 1000 }));
    const { events, error } = await collectUntilError(await adapter.streamText(credential, { model: 'gpt-fake', messages, maxTokens: 64 }));
    expect(textOf(events)).toBe('slow ');
    expect((error as UpstreamError).kind).toBe('timeout');
  });

  it('cancels a stream on abort', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'a b c d e f g', chunkDelayMs: 50 }));
    const stream = await adapter.streamText(credential, { model: 'gpt-fake', messages, maxTokens: 64 });
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text', delta: 'a ' });
    stream.abort();
    const error = await upstreamError(iterator.next());
    expect(error.kind).toBe('aborted');
  });

  it('checks a credential by listing models', async () => {
    fake.decide(() => ({ kind: 'ok' }));
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models', apiKey: 'sk-test-1' });
    fake.decide(() => ({ kind: 'error', status: 401 }));
    expect((await upstreamError(adapter.checkCredential(credential))).kind).toBe('auth');
  });
});

describe('Anthropic adapter against a fake upstream', () => {
  let fake: FakeUpstream;
  let adapter: ProviderAdapter;
  let credential: UpstreamCredential;
  beforeAll(async () => {
    fake = await startFakeAnthropic();
    adapter = createAnthropicAdapter({ streamIdleTimeoutMs: 300 });
    credential = { accountId: 'acc-a', providerSlug: 'anthropic', apiKey: 'sk-ant-1', baseUrl: fake.baseUrl, timeoutMs: 2000 };
  });
  afterAll(async () => fake?.close());

  it('moves system messages to the system field and merges same-role turns', () => {
    expect(
      toAnthropicMessages([
        { role: 'system', content: 'A' },
        { role: 'system', content: 'B' },
        { role: 'user', content: 'hi' },
        { role: 'user', content: 'there' },
        { role: 'assistant', content: 'hello' },
      ]),
    ).toEqual({
      system: 'A\n\nB',
      messages: [
        { role: 'user', content: 'hi\n\nthere' },
        { role: 'assistant', content: 'hello' },
      ],
    });
  });

  it('sends a Messages API request and maps the answer', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'Keepers tended the lamp.', usage: { inputTokens: 21, outputTokens: 6 } }));
    const result = await adapter.generateText(credential, { model: 'claude-fake', messages, maxTokens: 100, temperature: 0.5 });
    expect(result).toEqual({ text: 'Keepers tended the lamp.', usage: { inputTokens: 21, outputTokens: 6 }, finishReason: 'stop' });
    const call = fake.calls().at(-1)!;
    expect(call.apiKey).toBe('sk-ant-1');
    expect(call.headers['anthropic-version']).toBeTruthy();
    expect(call.body).toMatchObject({ model: 'claude-fake', max_tokens: 100, system: 'Be brief.', messages: [messages[1]], temperature: 0.5 });
  });

  it('maps max_tokens to finish reason length', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'cut', finishReason: 'max_tokens' }));
    expect((await adapter.generateText(credential, { model: 'claude-fake', messages, maxTokens: 1 })).finishReason).toBe('length');
  });

  it('streams text deltas with usage from message_start and message_delta', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'red green blue', usage: { inputTokens: 30, outputTokens: 3 } }));
    const events = await collect(await adapter.streamText(credential, { model: 'claude-fake', messages, maxTokens: 100 }));
    expect(textOf(events)).toBe('red green blue');
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { inputTokens: 30, outputTokens: 3 } },
      { type: 'finish', finishReason: 'stop' },
    ]);
  });

  it.each([
    [401, 'auth', 'authentication_error'],
    [403, 'auth', 'permission_error'],
    [429, 'rate_limit', 'rate_limit_error'],
    [500, 'server', 'api_error'],
    [529, 'server', 'overloaded_error'],
    [400, 'bad_request', 'invalid_request_error'],
  ])('classifies HTTP %i as %s', async (status, kind, code) => {
    fake.decide(() => ({ kind: 'error', status }));
    expect(await upstreamError(adapter.generateText(credential, { model: 'claude-fake', messages, maxTokens: 10 }))).toMatchObject({ kind, status, code });
    expect(await upstreamError(adapter.streamText(credential, { model: 'claude-fake', messages, maxTokens: 10 }))).toMatchObject({ kind, status });
  });

  it('treats a 403 about the model as a refusal of that model', async () => {
    fake.decide(() => ({ kind: 'error', status: 403, message: 'Your organization does not have access to model claude-fake.' }));
    expect((await upstreamError(adapter.generateText(credential, { model: 'claude-fake', messages, maxTokens: 10 }))).kind).toBe('model_refused');
  });

  it.each([
    ['an overloaded error event', 'error-event', 'server'],
    ['a dropped connection', 'disconnect', 'network'],
    ['a close without message_stop', 'close', 'server'],
  ] as const)('ends a stream broken by %s with an error', async (_label, how, kind) => {
    fake.decide(() => ({ kind: 'midway', text: 'one two three four', afterChunks: 1, how }));
    const { events, error } = await collectUntilError(await adapter.streamText(credential, { model: 'claude-fake', messages, maxTokens: 100 }));
    expect(textOf(events)).toBe('one ');
    expect((error as UpstreamError).kind).toBe(kind);
  });

  it('checks a credential by listing models', async () => {
    fake.decide(() => ({ kind: 'ok' }));
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models', apiKey: 'sk-ant-1' });
    fake.decide(() => ({ kind: 'error', status: 401 }));
    expect((await upstreamError(adapter.checkCredential(credential))).kind).toBe('auth');
  });
});
