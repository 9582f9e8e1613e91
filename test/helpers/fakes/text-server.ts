import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens } from 'gpt-tokenizer';

/**
 * The machinery under the text providers' fakes (OpenAI's chat completions in `chat-completions.ts`, Anthropic's
 * messages in `providers/anthropic/anthropic.fake.ts`): the requests they record, the behaviours a test decides per
 * call (so it can fail one account and not another), and the local HTTP server they run on.
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
      /** The token classes the usage reports, as parts of its totals, in the provider's own fields (see `TokenClasses`). */
      tokenClasses?: TokenClasses;
      finishReason?: string;
      /** Tool calls the model makes (after the text, if any); the finish reason becomes the provider's tool-call reason. */
      toolCalls?: { id: string; name: string; arguments: string }[];
      /** A refusal in the model's words, as OpenAI sends it: `message.refusal` (content null without text), streamed as `delta.refusal` pieces after any text. */
      refusal?: string;
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

/**
 * Token classes a fake reports (parts of the input and output totals). OpenAI's fake writes them in the `dialect`'s
 * fields: `openai` (default; also xAI, Groq, Mistral) `prompt_tokens_details.cached_tokens` and
 * `completion_tokens_details.reasoning_tokens`; `deepseek` `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`;
 * `openrouter` OpenAI's plus `prompt_tokens_details.cache_write_tokens`. Anthropic's fake writes `cached` as
 * `cache_read_input_tokens`, `cacheWrite` as `cache_creation_input_tokens` (its `input_tokens` is then the rest),
 * `cacheWrite1h` as the 1-hour part of it in `cache_creation` (the rest is `ephemeral_5m_input_tokens`; without
 * `cacheWrite`, every write is a 1-hour one) and `reasoning` as `output_tokens_details.thinking_tokens`.
 */
export interface TokenClasses {
  cached?: number;
  cacheWrite?: number;
  /** Of `cacheWrite`: written to a 1-hour cache entry (Anthropic's fake only). */
  cacheWrite1h?: number;
  reasoning?: number;
  dialect?: 'openai' | 'deepseek' | 'openrouter';
}

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

export const defaultText = (body: any): string => {
  const messages: { role: string; content: unknown }[] = body?.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const content = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
  return `Echo: ${content}`;
};

export const tokensOf = (text: string) => (text ? countTokens(text, { disallowedSpecial: new Set() }) : 0);
export const promptTokens = (body: any): number =>
  (body?.messages ?? []).reduce((sum: number, m: any) => sum + 4 + tokensOf(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)), 3) +
  (typeof body?.system === 'string' ? tokensOf(body.system) : 0);

/** Splits text into about `n` pieces of whole words. */
export function chunks(text: string): string[] {
  const parts = text.match(/\S+\s*|\s+/g) ?? [];
  return parts.length > 0 ? parts : [''];
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function readJson(request: IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  const raw = Buffer.concat(parts).toString('utf8');
  return raw ? JSON.parse(raw) : null;
}

export async function start(
  handler: (req: IncomingMessage, res: ServerResponse, state: { decide: Decide; requests: FakeRequest[] }) => Promise<void>,
  basePath: string,
  defaultDecide: Decide,
): Promise<FakeUpstream> {
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
