import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { collect, collectUntilError, messages, textOf } from '../../../../../test/helpers/text-streams.js';
import { createOpenAiAdapter } from './adapter.js';
import { SseDecoder } from './http.js';
import { UpstreamError, type ProviderAdapter, type UpstreamCredential } from '../types.js';

// The OpenAI-compatible client's HTTP and SSE handling (http.ts) against a bare server written byte for byte.

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

/** A bare local server whose answers each test writes byte for byte: what the SDK used to handle for us. */
interface RawUpstream {
  baseUrl: string;
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  /** TCP connections accepted so far. */
  connections(): number;
  answer(handler: (res: ServerResponse, req: IncomingMessage) => unknown): void;
  close(): Promise<void>;
}

async function startRawUpstream(): Promise<RawUpstream> {
  let handler: (res: ServerResponse, req: IncomingMessage) => unknown = (res) => res.end();
  const requests: RawUpstream['requests'] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      void handler(res, req);
    });
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    connections: () => connections,
    answer(next) {
      handler = next;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const deltaEvent = (content: string, finish: string | null = null) =>
  sse({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
const usageEvent = (input: number, output: number) =>
  sse({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: input, completion_tokens: output } });
const completion = (text: string) => ({
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2 },
});

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function startEvents(res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
}

describe('OpenAI-compatible adapter: the HTTP and SSE handling the SDK used to do', () => {
  let upstream: RawUpstream;
  let adapter: ProviderAdapter;
  let credential: UpstreamCredential;
  const request = { model: 'gpt-raw', messages, maxTokens: 64 };
  beforeAll(async () => {
    upstream = await startRawUpstream();
    adapter = createOpenAiAdapter({ defaultBaseUrl: 'http://unused.invalid/v1', streamIdleTimeoutMs: 500 });
    credential = { accountId: 'raw-1', providerSlug: 'vllm', apiKey: 'sk-raw', baseUrl: upstream.baseUrl, timeoutMs: 1000 };
  });
  afterAll(async () => upstream?.close());

  it('posts JSON under the base URL path, with the placeholder key for a keyless account', async () => {
    upstream.answer((res) => json(res, 200, completion('Hi there')));
    const result = await adapter.generateText({ ...credential, apiKey: null, baseUrl: `${upstream.baseUrl}/` }, request);
    expect(result).toEqual({ text: 'Hi there', usage: { inputTokens: 3, outputTokens: 2 }, finishReason: 'stop' });
    const sent = upstream.requests.at(-1)!;
    expect(sent).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });
    expect(sent.headers).toMatchObject({ authorization: 'Bearer no-key-required', 'content-type': 'application/json' });
    expect(JSON.parse(sent.body)).toEqual({ model: 'gpt-raw', messages, max_tokens: 64, stream: false });
  });

  it('carries the message and code of a JSON error body and classifies the status, sync and streamed', async () => {
    upstream.answer((res) => json(res, 429, { error: { message: 'Slow down, 3 requests per minute.', type: 'requests', code: 'rate_limit_exceeded' } }));
    const expected = { kind: 'rate_limit', status: 429, code: 'rate_limit_exceeded', message: 'Slow down, 3 requests per minute.' };
    expect(await upstreamError(adapter.generateText(credential, request))).toMatchObject(expected);
    expect(await upstreamError(adapter.streamText(credential, request))).toMatchObject(expected);
    // No code: the type stands in, and a 403 about the model is a refusal of that model.
    upstream.answer((res) => json(res, 403, { error: { message: 'This key may not use model gpt-raw.', type: 'permission_error' } }));
    expect(await upstreamError(adapter.generateText(credential, request))).toMatchObject({ kind: 'model_refused', status: 403, code: 'permission_error' });
  });

  it('reports an error body that is not JSON, or is empty, with its status', async () => {
    upstream.answer((res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>\n  Bad Gateway\n</body></html>');
    });
    const html = await upstreamError(adapter.generateText(credential, request));
    expect(html).toMatchObject({ kind: 'server', status: 502, code: 'http_502' });
    expect(html.message).toContain('HTTP 502');
    expect(html.message).toContain('Bad Gateway');
    upstream.answer((res) => res.writeHead(500).end());
    const empty = await upstreamError(adapter.streamText(credential, request));
    expect(empty).toMatchObject({ kind: 'server', status: 500, code: 'http_500' });
    expect(empty.message).toContain('HTTP 500');
  });

  it('tells a redirect apart from a bad request', async () => {
    upstream.answer((res) => res.writeHead(308, { location: 'https://api.example.com/v1/chat/completions' }).end());
    const error = await upstreamError(adapter.generateText(credential, request));
    expect(error).toMatchObject({ kind: 'server', status: 308, code: 'http_308' });
    expect(error.message).toContain('https://api.example.com/v1/chat/completions');
  });

  it('reports an answer that is not JSON, or has no choices, as a server error', async () => {
    upstream.answer((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Welcome to nginx</html>'));
    expect(await upstreamError(adapter.generateText(credential, request))).toMatchObject({ kind: 'server', code: 'malformed_response' });
    upstream.answer((res) => json(res, 200, { object: 'chat.completion', choices: [] }));
    expect(await upstreamError(adapter.generateText(credential, request))).toMatchObject({ kind: 'server', code: 'empty_response' });
  });

  it('times out before the headers, sync and streamed, and a whole answer that stalls midway', async () => {
    upstream.answer(() => undefined); // never answers
    const fast = { ...credential, timeoutMs: 150 };
    const started = Date.now();
    expect(await upstreamError(adapter.generateText(fast, request))).toMatchObject({ kind: 'timeout', code: 'timeout' });
    expect(await upstreamError(adapter.streamText(fast, request))).toMatchObject({ kind: 'timeout', code: 'timeout' });
    upstream.answer((res) => res.writeHead(200, { 'content-type': 'application/json' }).write('{"choices": ['));
    expect(await upstreamError(adapter.generateText(fast, request))).toMatchObject({ kind: 'timeout', code: 'timeout' });
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('gives up on time, or on the caller, while the call still waits for a free connection', async () => {
    upstream.answer(() => undefined);
    const single = createOpenAiAdapter({ defaultBaseUrl: upstream.baseUrl, connectionsPerOrigin: 1 });
    const account = { ...credential, baseUrl: null };
    const holding = upstreamError(single.generateText({ ...account, timeoutMs: 600 }, request));
    const started = Date.now();
    expect(await upstreamError(single.generateText({ ...account, timeoutMs: 100 }, request))).toMatchObject({ kind: 'timeout' });
    expect(await upstreamError(single.generateText(account, { ...request, signal: AbortSignal.timeout(50) }))).toMatchObject({ kind: 'aborted' });
    expect(Date.now() - started).toBeLessThan(500);
    expect((await holding).kind).toBe('timeout');
  });

  it('stops when the caller aborts, before the call and while waiting', async () => {
    upstream.answer(() => undefined);
    const before = upstream.requests.length;
    expect(await upstreamError(adapter.generateText(credential, { ...request, signal: AbortSignal.abort() }))).toMatchObject({ kind: 'aborted' });
    expect(upstream.requests.length).toBe(before);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(await upstreamError(adapter.generateText(credential, { ...request, signal: controller.signal }))).toMatchObject({ kind: 'aborted' });
    const streamController = new AbortController();
    setTimeout(() => streamController.abort(), 50);
    expect(await upstreamError(adapter.streamText(credential, { ...request, signal: streamController.signal }))).toMatchObject({ kind: 'aborted' });
  });

  it('stops a started stream when the caller aborts', async () => {
    upstream.answer(async (res) => {
      startEvents(res);
      res.write(deltaEvent('first '));
      await sleep(2000);
      res.end();
    });
    const controller = new AbortController();
    const stream = await adapter.streamText(credential, { ...request, signal: controller.signal });
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text', delta: 'first ' });
    controller.abort();
    expect(await upstreamError(iterator.next())).toMatchObject({ kind: 'aborted' });
  });

  it('destroys the upstream body on abort()', async () => {
    let upstreamClosed!: (early: boolean) => void;
    const closedEarly = new Promise<boolean>((resolve) => (upstreamClosed = resolve));
    upstream.answer(async (res) => {
      res.on('close', () => upstreamClosed(!res.writableEnded));
      startEvents(res);
      for (let i = 0; i < 50 && !res.destroyed; i++) {
        res.write(deltaEvent(`w${i} `));
        await sleep(20);
      }
      res.end();
    });
    const stream = await adapter.streamText(credential, request);
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text', delta: 'w0 ' });
    stream.abort();
    expect(await upstreamError(iterator.next())).toMatchObject({ kind: 'aborted' });
    expect(await closedEarly).toBe(true); // the connection closed before the upstream wrote all 50 words
  });

  it('turns an error event midway into an error after the delivered text', async () => {
    const midway = (error: unknown) =>
      upstream.answer((res) => {
        startEvents(res);
        res.write(deltaEvent('alpha '));
        res.write(deltaEvent('beta '));
        res.end(sse({ error }));
      });
    midway({ message: 'Rate limit reached for tokens per min.', type: 'tokens', code: 'rate_limit_exceeded' });
    const limited = await collectUntilError(await adapter.streamText(credential, request));
    expect(textOf(limited.events)).toBe('alpha beta ');
    expect(limited.error).toMatchObject({ kind: 'rate_limit', status: null, code: 'rate_limit_exceeded', message: 'Rate limit reached for tokens per min.' });
    midway({ message: 'The model crashed.' });
    expect((await collectUntilError(await adapter.streamText(credential, request))).error).toMatchObject({
      kind: 'server',
      code: 'stream_error',
      message: 'The model crashed.',
    });
  });

  it('reports malformed JSON in a data line', async () => {
    upstream.answer((res) => {
      startEvents(res);
      res.write(deltaEvent('ok '));
      res.end('data: {"choices": [\n\n');
    });
    const { events, error } = await collectUntilError(await adapter.streamText(credential, request));
    expect(textOf(events)).toBe('ok ');
    expect(error).toMatchObject({ kind: 'server', code: 'malformed_stream' });
  });

  it('reads a stream cut at arbitrary places, ends it at [DONE] and ignores what follows', async () => {
    const wire = Buffer.from(
      ': keep-alive comment\r\n\r\n' +
        deltaEvent('Ça ') +
        // One JSON document over two data lines, joined by a newline.
        'data: {"choices": [{"index": 0,\r\ndata: "delta": {"content": "va 🙂"}, "finish_reason": null}]}\r\n\r\n' +
        sse({ choices: [{ index: 1, delta: { content: 'another choice' }, finish_reason: null }] }) +
        deltaEvent('', 'stop') +
        usageEvent(9, 4) +
        'data: [DONE]\n\n' +
        deltaEvent('after done'),
    );
    const emoji = wire.indexOf(Buffer.from('🙂'));
    const done = wire.indexOf(Buffer.from('[DONE]'));
    const cuts = [5, 30, wire.indexOf(Buffer.from('data: {"choices": [{"index": 0,')) + 8, emoji + 2, done + 3, wire.length];
    upstream.answer(async (res) => {
      startEvents(res);
      let from = 0;
      for (const cut of cuts) {
        res.write(wire.subarray(from, cut));
        from = cut;
        await sleep(15);
      }
      res.end();
    });
    const events = await collect(await adapter.streamText(credential, request));
    expect(events).toEqual([
      { type: 'text', delta: 'Ça ' },
      { type: 'text', delta: 'va 🙂' },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 4 } },
      { type: 'finish', finishReason: 'stop' },
    ]);
  });

  it('decodes the same events whatever the chunk boundaries and line endings', () => {
    const wire = `${': ping\n\n'}event: message\ndata: first\n\ndata:second\ndata:  third\n\nid: 7\n\ndata: 🙂 é\n\n`;
    const expected = ['first', 'second\n third', '🙂 é'];
    for (const ending of ['\n', '\r\n', '\r']) {
      const bytes = Buffer.from(wire.replace(/\n/g, ending));
      for (let cut = 0; cut <= bytes.length; cut++) {
        const decoder = new SseDecoder();
        expect([...decoder.push(bytes.subarray(0, cut)), ...decoder.push(bytes.subarray(cut)), ...decoder.end()]).toEqual(expected);
      }
      const byByte = new SseDecoder();
      expect([...[...bytes].flatMap((byte) => byByte.push(Buffer.from([byte]))), ...byByte.end()]).toEqual(expected);
    }
  });

  it('never leaks a connection: failures in a row on a pool of one, then answers', async () => {
    const single = createOpenAiAdapter({ defaultBaseUrl: upstream.baseUrl, connectionsPerOrigin: 1, streamIdleTimeoutMs: 500 });
    const account = { ...credential, baseUrl: null, timeoutMs: 1000 };
    const connectionsBefore = upstream.connections();
    let failing = true;
    // Larger than what undici buffers on its own: an error body left unread would hold the only connection.
    const padding = 'x'.repeat(256 * 1024);
    upstream.answer((res, req) => {
      if (failing) return json(res, req.method === 'GET' ? 401 : 500, { error: { message: 'The server had an error.', type: 'server_error', padding } });
      if (req.method === 'GET') return json(res, 200, { object: 'list', data: [] });
      if (!JSON.parse(upstream.requests.at(-1)!.body).stream) return json(res, 200, completion('Still here'));
      startEvents(res);
      res.write(deltaEvent('Still ', null));
      res.write(deltaEvent('here', 'stop'));
      res.end('data: [DONE]\n\n');
    });
    for (let i = 0; i < 10; i++) {
      expect((await upstreamError(single.generateText(account, request))).status).toBe(500);
      expect((await upstreamError(single.streamText(account, request))).status).toBe(500);
      expect((await upstreamError(single.checkCredential(account))).status).toBe(401);
    }
    failing = false;
    for (let i = 0; i < 3; i++) {
      expect((await single.generateText(account, request)).text).toBe('Still here');
      expect(textOf(await collect(await single.streamText(account, request)))).toBe('Still here');
      await single.checkCredential(account);
    }
    // Every call above went over one kept-alive connection.
    expect(upstream.connections() - connectionsBefore).toBe(1);
  });
});
