import type { ServerResponse } from 'node:http';
import { invalidRequest, cacheMarkers } from './anthropic-checks.fake.js';
import { structuredText } from './anthropic-structured.fake.js';
import { signatureOf, thinkingTextOf } from './anthropic-thinking.fake.js';
import {
  chunks,
  promptTokens,
  readJson,
  sleep,
  start,
  tokensOf,
  type Decide,
  type FakeBehavior,
  type FakeRequest,
  type FakeUpstream,
} from '../../../../../test/helpers/fakes/text-server.js';
import type { StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/**
 * A local stand-in for Anthropic's Messages API (JSON and named SSE events), with the behaviours of
 * `test/helpers/fakes/text-server.ts`: it refuses what the real API refuses (`anthropic-checks.fake.ts`), answers
 * scripted `toolCalls` with `tool_use` blocks (streamed as `input_json_delta` pieces), stops at `stop_sequences`,
 * answers an `output_config.format` with JSON matching its schema (anthropic-structured.fake.ts), and reports prompt
 * caching as Anthropic does: the prompt up to the last `cache_control` is written to the cache on first sight and read
 * from it afterwards, `input_tokens` counts only what came after it, and `cache_creation` splits the writes by the
 * markers' `ttl` (5m or 1h).
 */

const ANTHROPIC_ERRORS: Record<number, { type: string; message: string }> = {
  400: { type: 'invalid_request_error', message: 'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row' },
  401: { type: 'authentication_error', message: 'invalid x-api-key' },
  403: { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' },
  404: { type: 'not_found_error', message: 'model: claude-fake' },
  429: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit.' },
  500: { type: 'api_error', message: 'Internal server error' },
  529: { type: 'overloaded_error', message: 'Overloaded' },
};

type ToolCallScript = { id: string; name: string; arguments: string };

/** "Echo: " and the last user turn's text (or its tool results), like the other fakes. */
function echo(body: any): string {
  const last = [...(body?.messages ?? [])].reverse().find((m: any) => m.role === 'user');
  if (typeof last?.content === 'string') return `Echo: ${last.content}`;
  const parts = (last?.content ?? []).map((b: any) =>
    b.type === 'text' ? b.text : b.type === 'tool_result' ? (typeof b.content === 'string' ? b.content : JSON.stringify(b.content ?? '')) : `[${b.type}]`,
  );
  return `Echo: ${parts.join(' ')}`;
}

function inputTokensOf(body: any): number {
  const systemBlocks = Array.isArray(body.system) ? tokensOf(body.system.map((b: any) => b.text).join('\n')) : 0;
  return promptTokens(body) + systemBlocks + (body.tools ? tokensOf(JSON.stringify(body.tools)) : 0);
}

/** The part of the prompt a cache marker closes: tools, then system, then messages, up to and including it. */
function cachedPrefix(body: any, path: unknown[]): unknown {
  const [where, k, j] = path as [string, number, number];
  if (where === 'tools') return { tools: body.tools.slice(0, k + 1) };
  if (where === 'system') return { tools: body.tools, system: body.system.slice(0, k + 1) };
  const message = body.messages[k];
  return { tools: body.tools, system: body.system, messages: [...body.messages.slice(0, k), { ...message, content: message.content.slice(0, j + 1) }] };
}

/**
 * The prompt cache, kept simple: the prompt up to the last breakpoint is written on first sight and read whole
 * afterwards. A write is split by lifetime as Anthropic bills mixed TTLs (prompt-caching docs, "Mixing different
 * TTLs"): the part up to the last 1-hour breakpoint is written for an hour, the rest for five minutes.
 */
function promptCache(body: any, total: number, seen: Set<string>): { creation: number; hour: number; read: number } {
  const points = cacheMarkers(body).map(({ path, marker }) => ({ prefix: cachedPrefix(body, path), hour: marker.ttl === '1h' }));
  const last = points.at(-1);
  if (!last) return { creation: 0, hour: 0, read: 0 };
  const tokens = (prefix: unknown) => Math.min(total, tokensOf(JSON.stringify(prefix)));
  const key = JSON.stringify([body.model, last.prefix]);
  if (seen.has(key)) return { creation: 0, hour: 0, read: tokens(last.prefix) };
  seen.add(key);
  const creation = tokens(last.prefix);
  const hour = Math.min(creation, Math.max(0, ...points.filter((point) => point.hour).map((point) => tokens(point.prefix))));
  return { creation, hour, read: 0 };
}

interface Answer {
  /** The thinking, when the request enabled it (signed like the real API's, see anthropic-thinking.fake.ts). */
  thinking: string | null;
  text: string;
  toolCalls: ToolCallScript[];
  stopReason: string;
  stopSequence: string | null;
  usage: {
    input_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
    /** The writes by lifetime (SDK `CacheCreation`): sent when the request has cache markers or the script a 1-hour part. */
    cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
    output_tokens: number;
    output_tokens_details?: { thinking_tokens: number };
  };
}

function answerOf(body: any, behavior: FakeBehavior, seen: Set<string>): Answer {
  let toolCalls = behavior.kind === 'ok' ? (behavior.toolCalls ?? []) : [];
  let text =
    (behavior.kind === 'ok' || behavior.kind === 'midway' ? behavior.text : undefined) ?? (toolCalls.length ? '' : (structuredText(body) ?? echo(body)));
  let stopSequence: string | null = null;
  for (const sequence of body.stop_sequences ?? []) {
    const at = text.indexOf(sequence);
    if (at >= 0 && (stopSequence === null || at < text.indexOf(stopSequence))) stopSequence = sequence;
  }
  if (stopSequence !== null) {
    text = text.slice(0, text.indexOf(stopSequence));
    toolCalls = [];
  }
  const scripted = behavior.kind === 'ok' && typeof behavior.usage === 'object' ? behavior.usage : null;
  const total = scripted?.inputTokens ?? inputTokensOf(body);
  const thinking = thinkingTextOf(body);
  const output =
    scripted?.outputTokens ?? tokensOf(text) + tokensOf(thinking ?? '') + toolCalls.reduce((sum, call) => sum + tokensOf(call.name + call.arguments), 0);
  // Scripted classes replace what the prompt's cache markers would give.
  const classes = behavior.kind === 'ok' ? behavior.tokenClasses : undefined;
  const scriptedWrites = classes?.cacheWrite ?? classes?.cacheWrite1h ?? 0;
  const cache = classes
    ? { creation: scriptedWrites, hour: Math.min(classes.cacheWrite1h ?? 0, scriptedWrites), read: classes.cached ?? 0 }
    : promptCache(body, total, seen);
  const byLifetime = cacheMarkers(body).length > 0 || classes?.cacheWrite1h !== undefined;
  const explicit = behavior.kind === 'ok' ? behavior.finishReason : undefined;
  const stopReason =
    explicit ?? (stopSequence !== null ? 'stop_sequence' : toolCalls.length ? 'tool_use' : output >= body.max_tokens ? 'max_tokens' : 'end_turn');
  const reasoning = classes?.reasoning ?? (thinking ? tokensOf(thinking) : 0);
  return {
    thinking,
    text,
    toolCalls,
    stopReason,
    stopSequence,
    usage: {
      input_tokens: total - cache.creation - cache.read,
      cache_creation_input_tokens: cache.creation,
      cache_read_input_tokens: cache.read,
      ...(byLifetime ? { cache_creation: { ephemeral_5m_input_tokens: cache.creation - cache.hour, ephemeral_1h_input_tokens: cache.hour } } : {}),
      output_tokens: output,
      ...(reasoning ? { output_tokens_details: { thinking_tokens: reasoning } } : {}),
    },
  };
}

/** Arguments JSON in the pieces the real API streams: an empty first piece, then short runs of characters. */
const argumentPieces = (json: string): string[] => ['', ...(json.match(/[\s\S]{1,12}/g) ?? [])];

async function streamAnswer(res: ServerResponse, body: any, behavior: FakeBehavior, answer: Answer, id: string): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_fake' });
  const event = (name: string, data: Record<string, unknown>) => res.write(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
  // The input counts (cache reads and writes included) come in message_start; message_delta carries the output's.
  const { output_tokens_details: outputDetails, ...inputUsage } = answer.usage;
  event('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...inputUsage, output_tokens: 1 },
    },
  });
  event('ping', {});
  let index = 0;
  if (answer.thinking) {
    event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const piece of chunks(answer.thinking)) event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } });
    event('content_block_delta', { index, delta: { type: 'signature_delta', signature: signatureOf(answer.thinking) } });
    event('content_block_stop', { index });
    index++;
  }
  if (answer.text || answer.toolCalls.length === 0) {
    event('content_block_start', { index, content_block: { type: 'text', text: '' } });
    const pieces = chunks(answer.text);
    const delay = behavior.kind === 'ok' || behavior.kind === 'midway' ? (behavior.chunkDelayMs ?? 0) : 0;
    for (let i = 0; i < pieces.length; i++) {
      if (behavior.kind === 'midway' && i === behavior.afterChunks) {
        if (behavior.how === 'disconnect') {
          await sleep(30); // let what was written reach the client before the connection drops
          res.socket?.destroy();
          return;
        }
        if (behavior.how === 'error-event') event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
        res.end();
        return;
      }
      if (behavior.kind === 'ok' && behavior.pauseAfter && i === behavior.pauseAfter.chunks) await behavior.pauseAfter.until;
      event('content_block_delta', { index, delta: { type: 'text_delta', text: pieces[i] } });
      if (delay) await sleep(delay);
      if (res.destroyed) return;
    }
    event('content_block_stop', { index });
    index++;
  }
  for (const call of answer.toolCalls) {
    event('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    for (const piece of argumentPieces(call.arguments)) event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
    event('content_block_stop', { index });
    index++;
  }
  event('message_delta', {
    delta: { stop_reason: answer.stopReason, stop_sequence: answer.stopSequence },
    usage: { output_tokens: answer.usage.output_tokens, ...(outputDetails ? { output_tokens_details: outputDetails } : {}) },
  });
  event('message_stop', {});
  res.end();
}

export function startFakeAnthropic(decide: Decide = () => ({ kind: 'ok' })): Promise<FakeUpstream> {
  const cachedPrompts = new Set<string>();
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

      if (!apiKey) return error(401, undefined, 'x-api-key header is required');
      if (!req.headers['anthropic-version']) return error(400, undefined, 'anthropic-version: header is required');
      if (req.method === 'GET' && url.pathname === '/v1/models') {
        if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            data: [{ type: 'model', id: 'claude-fake', display_name: 'Claude Fake', created_at: '2025-01-01T00:00:00Z' }],
            has_more: false,
            first_id: 'claude-fake',
            last_id: 'claude-fake',
          }),
        );
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/v1/messages') return error(404, undefined, `Not found: ${url.pathname}`);
      if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
      const problem = invalidRequest(body);
      if (problem) return error(400, undefined, problem);
      if (behavior.kind === 'hang') return;
      if (behavior.kind === 'ok') {
        if (behavior.waitFor) await behavior.waitFor;
        if (behavior.delayMs) await sleep(behavior.delayMs);
      }

      const id = `msg_${Math.random().toString(36).slice(2, 14)}`;
      const answer = answerOf(body, behavior, cachedPrompts);
      if (body.stream) return streamAnswer(res, body, behavior, answer, id);

      const content = [
        ...(answer.thinking ? [{ type: 'thinking', thinking: answer.thinking, signature: signatureOf(answer.thinking) }] : []),
        ...(answer.text || answer.toolCalls.length === 0 ? [{ type: 'text', text: answer.text }] : []),
        ...answer.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.arguments || '{}') })),
      ];
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_fake' });
      res.end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content,
          stop_reason: answer.stopReason,
          stop_sequence: answer.stopSequence,
          usage: answer.usage,
        }),
      );
    },
    '',
    decide,
  );
}

export const startTextFake: StartTextFake = startFakeAnthropic;
