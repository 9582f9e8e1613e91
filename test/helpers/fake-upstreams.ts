import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens } from 'gpt-tokenizer';

/**
 * Local stand-ins for real AI providers, speaking their wire formats: OpenAI chat completions (JSON and SSE with
 * `data: [DONE]`, usage only when `stream_options.include_usage` is asked for) and Anthropic messages (JSON and
 * named SSE events). Each request's behaviour is decided per call, so tests can fail one account and not another.
 */

export interface FakeRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The credential the caller presented (Bearer for OpenAI, x-api-key for Anthropic). */
  apiKey: string | null;
  body: any;
}

export type FakeBehavior =
  | {
      kind: 'ok';
      /** The answer; default: "Echo: <last user message>". */
      text?: string;
      /** Wait before answering (headers included). */
      delayMs?: number;
      /** Resolve before answering (a gate the test opens). */
      waitFor?: Promise<unknown>;
      /** Pause between streamed chunks. */
      chunkDelayMs?: number;
      /** `none` omits usage even when asked (servers that never send it). */
      usage?: 'real' | 'none' | { inputTokens: number; outputTokens: number };
      finishReason?: string;
      /** Streams only: stop after this many chunks until `until` resolves. */
      pauseAfter?: { chunks: number; until: Promise<unknown> };
    }
  | { kind: 'error'; status: number; body?: unknown; message?: string }
  | {
      kind: 'midway';
      text?: string;
      /** Chunks sent before breaking. */
      afterChunks: number;
      /** `error-event`: the provider's in-stream error; `disconnect`: the socket is destroyed; `close`: a clean end without a finish. */
      how: 'error-event' | 'disconnect' | 'close';
      chunkDelayMs?: number;
    }
  | { kind: 'hang' };

export type Decide = (request: FakeRequest) => FakeBehavior | Promise<FakeBehavior>;

export interface FakeUpstream {
  /** Base URL to configure (`.../v1` for OpenAI-compatible, the origin for Anthropic). */
  baseUrl: string;
  origin: string;
  requests: FakeRequest[];
  /** Completions/messages calls only (not model listings). */
  calls(): FakeRequest[];
  decide(fn: Decide): void;
  close(): Promise<void>;
}

const defaultText = (body: any): string => {
  const messages: { role: string; content: unknown }[] = body?.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const content = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
  return `Echo: ${content}`;
};

const tokensOf = (text: string) => (text ? countTokens(text, { disallowedSpecial: new Set() }) : 0);
const promptTokens = (body: any): number =>
  (body?.messages ?? []).reduce((sum: number, m: any) => sum + 4 + tokensOf(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)), 3) +
  (typeof body?.system === 'string' ? tokensOf(body.system) : 0);

/** Splits text into about `n` pieces of whole words. */
function chunks(text: string): string[] {
  const parts = text.match(/\S+\s*|\s+/g) ?? [];
  return parts.length > 0 ? parts : [''];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readJson(request: IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  const raw = Buffer.concat(parts).toString('utf8');
  return raw ? JSON.parse(raw) : null;
}

async function start(handler: (req: IncomingMessage, res: ServerResponse, state: { decide: Decide; requests: FakeRequest[] }) => Promise<void>, basePath: string, defaultDecide: Decide): Promise<FakeUpstream> {
  const state = { decide: defaultDecide, requests: [] as FakeRequest[] };
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((req, res) => {
    handler(req, res, state).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(err), type: 'server_error' } }));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    baseUrl: `${origin}${basePath}`,
    requests: state.requests,
    calls: () => state.requests.filter((r) => r.method === 'POST'),
    decide(fn) {
      state.decide = fn;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------- OpenAI-compatible

const OPENAI_ERRORS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  401: { message: 'Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.', type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { message: 'Project `proj_fake` does not have access to model `gpt-fake`', type: 'invalid_request_error', code: 'model_not_found' },
  404: { message: 'The model `gpt-fake` does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
  429: { message: 'Rate limit reached for requests. Please try again in 20ms.', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null },
  503: { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null },
};

export function startFakeOpenAi(decide: Decide = () => ({ kind: 'ok' })): Promise<FakeUpstream> {
  return start(
    async (req, res, state) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const auth = req.headers.authorization ?? '';
      const apiKey = auth.startsWith('Bearer ') ? auth.slice(7) : null;
      const body = req.method === 'POST' ? await readJson(req) : null;
      const request: FakeRequest = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, apiKey, body };
      state.requests.push(request);

      const behavior = await state.decide(request);
      const error = (status: number, override?: unknown, message?: string) => {
        const known = OPENAI_ERRORS[status] ?? { message: `Error ${status}`, type: 'server_error', code: null };
        res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_fake' });
        res.end(JSON.stringify(override ?? { error: { ...known, message: message ?? known.message, param: null } }));
      };

      if (req.method === 'GET' && url.pathname === '/v1/models') {
        if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'gpt-fake', object: 'model', created: 1700000000, owned_by: 'fake' }] }));
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `Unknown request URL: ${req.method} ${url.pathname}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' } }));
        return;
      }
      if (behavior.kind === 'hang') return; // never answers; the socket is destroyed on close
      if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);

      const id = `chatcmpl-${Math.random().toString(36).slice(2, 12)}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model;
      const text = behavior.text ?? defaultText(body);
      const limit = body.max_completion_tokens ?? body.max_tokens;
      const usage =
        behavior.kind === 'ok' && typeof behavior.usage === 'object'
          ? { prompt_tokens: behavior.usage.inputTokens, completion_tokens: behavior.usage.outputTokens }
          : { prompt_tokens: promptTokens(body), completion_tokens: tokensOf(text) };
      const usageBlock = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
      const sendUsage = behavior.kind === 'ok' && behavior.usage !== 'none';

      if (behavior.kind === 'ok') {
        if (behavior.waitFor) await behavior.waitFor;
        if (behavior.delayMs) await sleep(behavior.delayMs);
      }

      if (!body.stream) {
        if (behavior.kind !== 'ok') return error(500);
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_fake' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: behavior.finishReason ?? (limit && usage.completion_tokens >= limit ? 'length' : 'stop') }],
            ...(sendUsage ? { usage: usageBlock } : {}),
            system_fingerprint: 'fp_fake',
          }),
        );
        return;
      }

      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': 'req_fake' });
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      const chunk = (delta: Record<string, unknown>, finish: string | null) =>
        send({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
      chunk({ role: 'assistant', content: '' }, null);
      const pieces = chunks(text);
      const delay = behavior.chunkDelayMs ?? 0;
      for (let i = 0; i < pieces.length; i++) {
        if (behavior.kind === 'midway' && i === behavior.afterChunks) {
          if (behavior.how === 'disconnect') {
            await sleep(30); // let what was written reach the client before the connection drops
            res.socket?.destroy();
            return;
          }
          if (behavior.how === 'error-event') send({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } });
          res.end();
          return;
        }
        if (behavior.kind === 'ok' && behavior.pauseAfter && i === behavior.pauseAfter.chunks) await behavior.pauseAfter.until;
        chunk({ content: pieces[i] }, null);
        if (delay) await sleep(delay);
        if (res.destroyed) return;
      }
      chunk({}, behavior.kind === 'ok' ? (behavior.finishReason ?? 'stop') : 'stop');
      if (sendUsage && body.stream_options?.include_usage) {
        send({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices: [], usage: usageBlock });
      }
      res.write('data: [DONE]\n\n');
      res.end();
    },
    '/v1',
    decide,
  );
}

// ---------------------------------------------------------------- Anthropic

const ANTHROPIC_ERRORS: Record<number, { type: string; message: string }> = {
  400: { type: 'invalid_request_error', message: 'messages: roles must alternate between "user" and "assistant"' },
  401: { type: 'authentication_error', message: 'invalid x-api-key' },
  403: { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' },
  404: { type: 'not_found_error', message: 'model: claude-fake' },
  429: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit.' },
  500: { type: 'api_error', message: 'Internal server error' },
  529: { type: 'overloaded_error', message: 'Overloaded' },
};

export function startFakeAnthropic(decide: Decide = () => ({ kind: 'ok' })): Promise<FakeUpstream> {
  return start(
    async (req, res, state) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const bearerKey = req.headers.authorization?.startsWith('Bearer ') ? req.headers.authorization.slice(7) : null;
      const apiKey = (req.headers['x-api-key'] as string | undefined) ?? bearerKey;
      const body = req.method === 'POST' ? await readJson(req) : null;
      const request: FakeRequest = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, apiKey, body };
      state.requests.push(request);
      const behavior = await state.decide(request);
      const error = (status: number, override?: unknown, message?: string) => {
        const known = ANTHROPIC_ERRORS[status] ?? { type: 'api_error', message: `Error ${status}` };
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_fake' });
        res.end(JSON.stringify(override ?? { type: 'error', error: { type: known.type, message: message ?? known.message } }));
      };

      if (!req.headers['anthropic-version']) return error(400, undefined, 'anthropic-version: header is required');
      if (req.method === 'GET' && url.pathname === '/v1/models') {
        if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: [{ type: 'model', id: 'claude-fake', display_name: 'Claude Fake', created_at: '2025-01-01T00:00:00Z' }], has_more: false, first_id: 'claude-fake', last_id: 'claude-fake' }));
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/v1/messages') return error(404, undefined, `Not found: ${url.pathname}`);
      if (behavior.kind === 'hang') return;
      if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
      if (behavior.kind === 'ok') {
        if (behavior.waitFor) await behavior.waitFor;
        if (behavior.delayMs) await sleep(behavior.delayMs);
      }

      const id = `msg_${Math.random().toString(36).slice(2, 14)}`;
      const text = behavior.text ?? defaultText(body);
      const input = behavior.kind === 'ok' && typeof behavior.usage === 'object' ? behavior.usage.inputTokens : promptTokens(body);
      const output = behavior.kind === 'ok' && typeof behavior.usage === 'object' ? behavior.usage.outputTokens : tokensOf(text);
      const stopReason = behavior.kind === 'ok' && behavior.finishReason ? behavior.finishReason : output >= body.max_tokens ? 'max_tokens' : 'end_turn';

      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_fake' });
        res.end(
          JSON.stringify({
            id,
            type: 'message',
            role: 'assistant',
            model: body.model,
            content: [{ type: 'text', text }],
            stop_reason: stopReason,
            stop_sequence: null,
            usage: { input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          }),
        );
        return;
      }

      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_fake' });
      const event = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      event('message_start', {
        type: 'message_start',
        message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: input, output_tokens: 1 } },
      });
      event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      event('ping', { type: 'ping' });
      const pieces = chunks(text);
      const delay = behavior.kind === 'ok' || behavior.kind === 'midway' ? (behavior.chunkDelayMs ?? 0) : 0;
      for (let i = 0; i < pieces.length; i++) {
        if (behavior.kind === 'midway' && i === behavior.afterChunks) {
          if (behavior.how === 'disconnect') {
            await sleep(30); // let what was written reach the client before the connection drops
            res.socket?.destroy();
            return;
          }
          if (behavior.how === 'error-event') event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
          res.end();
          return;
        }
        event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: pieces[i] } });
        if (delay) await sleep(delay);
        if (res.destroyed) return;
      }
      event('content_block_stop', { type: 'content_block_stop', index: 0 });
      event('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: output } });
      event('message_stop', { type: 'message_stop' });
      res.end();
    },
    '',
    decide,
  );
}
