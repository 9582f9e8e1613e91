import { EventEmitter } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import { UpstreamError, classifyStatus } from '../types.js';
import { connectRefusal, directUpstreamHttp, redirectError, type UpstreamHttp } from '../upstream-http.js';

/**
 * A lean HTTP client for OpenAI-compatible APIs on undici, for the text hot path (the `openai` SDK's fetch, web
 * streams and header objects cost about 1 ms of CPU per call). One keep-alive pool per origin, from the gateway's
 * outbound client (`upstream-http.ts`, which checks each new connection), and no retries: the account pool fails
 * over itself. It does what the SDK did for us: time limits, cancelling, error bodies, SSE.
 */

export interface CallOptions {
  /** Bounds a whole JSON answer, or a stream's wait for its response headers. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** The provider's model name, to tell a refusal of the model from a bad key. */
  model: string;
}

/** A stream the upstream accepted (2xx): its events' JSON payloads up to `data: [DONE]`. */
export interface OpenAiEventStream {
  chunks: AsyncIterable<Record<string, unknown>>;
  /** Destroys the upstream body (and so its connection). */
  abort(): void;
}

/** Streams hold a connection for their whole length: the cap is well above the concurrent streams one instance serves. */
const DEFAULT_CONNECTIONS_PER_ORIGIN = 1024;
const USER_AGENT = 'Storefront-Gateway/1.0';

/** One account's way in: a base URL (possibly with a path prefix, http or https) and its key. */
export class OpenAiEndpoint {
  private readonly pool: Pool;
  private readonly pathPrefix: string;
  private readonly query: string;
  private readonly getHeaders: Record<string, string>;
  private readonly postHeaders: Record<string, string>;

  constructor(baseUrl: string, apiKey: string, connections = DEFAULT_CONNECTIONS_PER_ORIGIN, http: UpstreamHttp = directUpstreamHttp) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new UpstreamError('network', `The provider's base URL is not a valid URL: ${baseUrl}`, null, 'connection_error');
    }
    this.pool = http.pool(url.origin, connections);
    this.pathPrefix = url.pathname.replace(/\/+$/, '');
    this.query = url.search;
    this.getHeaders = { authorization: `Bearer ${apiKey}`, accept: 'application/json', 'user-agent': USER_AGENT };
    this.postHeaders = Object.assign({}, this.getHeaders, { 'content-type': 'application/json' });
  }

  /** GETs (no body) or POSTs one JSON document and returns the JSON answer. Every failure is an UpstreamError. */
  async json(path: string, body: object | undefined, options: CallOptions): Promise<Record<string, unknown>> {
    const call = new Call(options);
    try {
      const response = await this.send(path, body, call);
      return parseAnswer(await response.body.text());
    } catch (err) {
      throw call.error(err);
    } finally {
      call.end();
    }
  }

  /** POSTs and resolves once the upstream answered 2xx; the time limit stops at the headers. */
  async stream(path: string, body: object, options: CallOptions): Promise<OpenAiEventStream> {
    const call = new Call(options);
    let response: Dispatcher.ResponseData;
    try {
      response = await this.send(path, body, call);
    } catch (err) {
      call.end();
      throw call.error(err);
    }
    call.stopTimer();
    const upstream = response.body;
    return { chunks: eventPayloads(upstream, call), abort: () => upstream.destroy() };
  }

  private async send(path: string, body: object | undefined, call: Call): Promise<Dispatcher.ResponseData> {
    // Already cancelled: undici would still take a connection only to destroy it.
    if (call.aborted) throw new Error('The call was stopped.');
    const response = await call.wait(
      this.pool.request({
        method: body === undefined ? 'GET' : 'POST',
        path: `${this.pathPrefix}${path}${this.query}`,
        headers: body === undefined ? this.getHeaders : this.postHeaders,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: call,
      }),
    );
    const status = response.statusCode;
    if (status >= 200 && status < 300) return response;
    // Read the error body to its end: it carries the reason, and a consumed body frees the connection for reuse.
    const text = await response.body.text();
    throw statusError(status, text, call.model, response.headers.location);
  }
}

/**
 * One call's time limit and the caller's signal. It is also the signal undici takes: undici accepts an EventEmitter
 * with `aborted`, and that costs far less per call than an AbortController (about 0.1 ms of CPU, measured).
 */
class Call extends EventEmitter {
  readonly model: string;
  aborted = false;
  private readonly callerSignal: AbortSignal | undefined;
  private readonly timer: NodeJS.Timeout;
  private timedOut = false;
  private giveUp: ((reason: Error) => void) | null = null;

  constructor(options: CallOptions) {
    super();
    this.model = options.model;
    this.callerSignal = options.signal;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.stop();
    }, options.timeoutMs);
    if (this.callerSignal?.aborted) this.stop();
    else this.callerSignal?.addEventListener('abort', this.stop);
  }

  /**
   * Settles with undici's answer, or rejects as soon as the call is stopped: undici only acts on the signal once the
   * request is on a socket, not while it waits for a free connection or for the TCP/TLS connect.
   */
  wait<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.giveUp = reject;
      work.then(resolve, reject);
    });
  }

  stopTimer(): void {
    clearTimeout(this.timer);
  }

  end(): void {
    clearTimeout(this.timer);
    this.callerSignal?.removeEventListener('abort', this.stop);
  }

  error(err: unknown): UpstreamError {
    if (err instanceof UpstreamError) return err;
    if (this.timedOut) return new UpstreamError('timeout', 'The provider did not answer in time.', null, 'timeout');
    if (this.callerSignal?.aborted) return new UpstreamError('aborted', 'The call was cancelled.');
    return connectionError(err);
  }

  private readonly stop = () => {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
    this.giveUp?.(new Error('The call was stopped.'));
  };
}

async function* eventPayloads(body: Readable, call: Call): AsyncGenerator<Record<string, unknown>> {
  const decoder = new SseDecoder();
  let done = false;
  function* payloads(events: string[]): Generator<Record<string, unknown>> {
    for (const data of events) {
      // Like the SDK, read on to the end after [DONE] (ignoring the rest) so the connection can be reused.
      if (done) continue;
      if (data.startsWith('[DONE]')) done = true;
      else yield parseEvent(data);
    }
  }
  try {
    for await (const bytes of body) yield* payloads(decoder.push(bytes as Buffer));
    yield* payloads(decoder.end());
  } catch (err) {
    throw call.error(err);
  } finally {
    call.end();
  }
}

const LINE_END = /\r\n|\r|\n/g;

/** Splits a text/event-stream into its events' data: multi-line data joined by \n, comments and other fields ignored. */
export class SseDecoder {
  private readonly utf8 = new StringDecoder('utf8');
  private rest = '';
  private data: string | null = null;
  private started = false;

  push(bytes: Buffer | string): string[] {
    let text = typeof bytes === 'string' ? bytes : this.utf8.write(bytes);
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const buffer = this.rest + text;
    const events: string[] = [];
    let start = 0;
    LINE_END.lastIndex = 0;
    for (let match = LINE_END.exec(buffer); match; match = LINE_END.exec(buffer)) {
      // A CR that ends the buffer may be the first half of a CRLF cut by the chunk boundary.
      if (match[0] === '\r' && match.index === buffer.length - 1) break;
      this.line(buffer.slice(start, match.index), events);
      start = LINE_END.lastIndex;
    }
    this.rest = buffer.slice(start);
    return events;
  }

  /** The body ended: a CR held back at the very end was a line end after all. */
  end(): string[] {
    const events: string[] = [];
    if (this.rest.endsWith('\r')) this.line(this.rest.slice(0, -1), events);
    this.rest = '';
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line === '') {
      if (this.data !== null) events.push(this.data);
      this.data = null;
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) return; // a comment (keep-alive)
    if ((colon < 0 ? line : line.slice(0, colon)) !== 'data') return;
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.data = this.data === null ? value : `${this.data}\n${value}`;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

function parseAnswer(text: string): Record<string, unknown> {
  const answer = tryJson(text);
  if (!isObject(answer))
    throw new UpstreamError('server', `The provider sent an answer that is not JSON: ${snippet(text) || '(empty)'}`, null, 'malformed_response');
  return answer;
}

function parseEvent(data: string): Record<string, unknown> {
  const event = tryJson(data);
  if (!isObject(event)) throw new UpstreamError('server', 'The provider sent a malformed stream.', null, 'malformed_stream');
  if (event.error) throw streamedError(event.error);
  return event;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `{"error": {"message", "code" or "type"}}` like OpenAI; also a bare string error or fields at the top level. */
function errorFields(body: unknown): { message: string | null; code: string | null } {
  const payload: unknown = Array.isArray(body) ? body[0] : body;
  if (!isObject(payload)) return { message: null, code: null };
  if (typeof payload.error === 'string') return { message: payload.error || null, code: null };
  const fields = isObject(payload.error) ? payload.error : payload;
  const message = typeof fields.message === 'string' && fields.message ? fields.message : null;
  const code = typeof fields.code === 'string' ? fields.code : typeof fields.type === 'string' ? fields.type : null;
  return { message, code };
}

const GOOGLE_KEY_REFUSAL = /API key (not valid|not found|expired)/i;

const snippet = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 200);

export function statusError(status: number, text: string, model: string, location?: string | string[]): UpstreamError {
  if (status >= 300 && status < 400) return redirectError(status, typeof location === 'string' ? location : null);
  const fields = errorFields(tryJson(text));
  const body = snippet(text);
  const message = fields.message ?? (body ? `The provider answered HTTP ${status}: ${body}` : `The provider answered HTTP ${status} with no error message.`);
  // Google's OpenAI-compatible endpoint answers an invalid key with HTTP 400: the account's fault (fail over), not the request's.
  if (status === 400 && (GOOGLE_KEY_REFUSAL.test(message) || text.includes('API_KEY_INVALID')))
    return new UpstreamError('auth', message, status, 'API_KEY_INVALID');
  return new UpstreamError(classifyStatus(status, fields.code, message, model), message, status, fields.code ?? `http_${status}`);
}

/** An `{"error": ...}` event inside a stream that had already started (no status to go by). */
function streamedError(error: unknown): UpstreamError {
  const fields = errorFields({ error });
  const kind = fields.code && /rate_limit/.test(fields.code) ? 'rate_limit' : 'server';
  const message = fields.message ?? `The provider reported an error midway: ${snippet(JSON.stringify(error))}`;
  return new UpstreamError(kind, message, null, fields.code ?? 'stream_error');
}

function connectionError(err: unknown): UpstreamError {
  // The outbound policy refused the account's address (or could not resolve it).
  const refused = connectRefusal(err);
  if (refused) return refused;
  const code = (err as { code?: unknown } | null)?.code;
  // The pool's bodyTimeout backstop.
  if (code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT')
    return new UpstreamError('timeout', 'The provider did not answer in time.', null, 'timeout');
  return new UpstreamError('network', `The connection to the provider failed: ${describe(err)}`, null, 'connection_error');
}

function describe(err: unknown): string {
  // A host with several addresses (localhost: ::1 and 127.0.0.1) fails with an AggregateError without a message.
  if (err instanceof AggregateError && !err.message) return err.errors.map(describe).join('; ');
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return err.message || (typeof code === 'string' ? code : err.name);
  }
  return String(err);
}
