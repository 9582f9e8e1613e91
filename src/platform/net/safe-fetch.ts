import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AppError } from '../http/errors.js';
import { ipLiteral } from './address-policy.js';
import { createOutboundPolicy, FetchError, type OutboundPolicySettings, type ResolvedAddress } from './outbound-policy.js';

export interface SafeFetchOptions {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Total time for every hop and the whole body (default 8 s). */
  timeoutMs?: number;
  /** Largest body accepted, enforced while streaming (default 15 MB). */
  maxBytes?: number;
  /** Redirects followed, each one re-checked (default 5; 0 refuses any redirect). */
  maxRedirects?: number;
  /** Allow plain http to public hosts (default false: https, or http to private hosts when private networking is allowed). */
  allowHttp?: boolean;
  /** Throw `HTTP_STATUS` for a non-2xx final answer (default true); false returns it with its body. */
  throwOnHttpError?: boolean;
}

export interface SafeResponse {
  /** The final URL after redirects. */
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
  contentType: string | null;
  body: Buffer;
}

export interface SafeFetcherOptions extends OutboundPolicySettings {
  userAgent?: string;
}

export type SafeFetcher = (url: string, options?: SafeFetchOptions) => Promise<SafeResponse>;

export const DEFAULT_FETCH_TIMEOUT_MS = 8_000;
export const DEFAULT_FETCH_MAX_BYTES = 15 * 1024 * 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB` : bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} bytes`;

/**
 * An outbound HTTP client for URLs supplied by users: every hop passes the outbound policy (`outbound-policy.ts`:
 * public addresses only unless private networking is allowed, https unless the host is private), the connection goes
 * to exactly the address checked (no DNS rebinding between check and connect), and a total timeout and a byte cap hold.
 */
export function createSafeFetcher(settings: SafeFetcherOptions): SafeFetcher {
  const policy = createOutboundPolicy(settings);
  const userAgent = settings.userAgent ?? 'Storefront/1.0 (media fetcher)';

  const checkedTarget = async (url: URL, allowHttp: boolean): Promise<ResolvedAddress> => (await policy.check(url, { allowHttp }))[0]!;

  function send(url: URL, target: ResolvedAddress, options: { method: string; headers: Record<string, string>; body?: string | Buffer }, signal: AbortSignal) {
    // The connection goes to the address checked above, whatever the resolver would answer now.
    const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
      if ((lookupOptions as { all?: boolean }).all) {
        (callback as unknown as (err: null, addresses: { address: string; family: number }[]) => void)(null, [target]);
      } else {
        callback(null, target.address, target.family);
      }
    };
    const client = url.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { 'user-agent': userAgent, 'accept-encoding': 'identity', ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    return new Promise<IncomingMessage>((resolvePromise, reject) => {
      const request = client.request(
        {
          protocol: url.protocol,
          hostname: ipLiteral(url.hostname) ?? url.hostname,
          port: url.port || undefined,
          path: `${url.pathname}${url.search}`,
          method: options.method,
          headers,
          lookup: pinned,
          agent: false,
          signal,
        },
        resolvePromise,
      );
      request.on('error', reject);
      request.end(options.body);
    });
  }

  return async function safeFetch(input, options = {}) {
    const timeoutMs = options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    const maxBytes = options.maxBytes ?? DEFAULT_FETCH_MAX_BYTES;
    const maxRedirects = options.maxRedirects ?? 5;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      clearTimeout(timer);
      throw new FetchError('INVALID_URL', 'The URL is not valid.', null, null);
    }
    let method: string = options.method ?? 'GET';
    let body = options.body;
    let headers = { ...options.headers };
    const timedOut = () => new FetchError('TIMEOUT', `The remote server did not answer in time (limit ${Math.round(timeoutMs / 100) / 10} s).`, null, url.href);
    try {
      for (let hop = 0; ; hop++) {
        const target = await untilAborted(checkedTarget(url, options.allowHttp ?? false), controller.signal);
        if (controller.signal.aborted) throw timedOut();
        const response = await send(url, target, { method, headers, body }, controller.signal).catch((err: NodeJS.ErrnoException) => {
          if (controller.signal.aborted) throw timedOut();
          throw new FetchError('CONNECTION_FAILED', `Could not connect to "${url.host}" (${err.code ?? err.message}).`, null, url.href);
        });
        const status = response.statusCode ?? 0;
        const location = response.headers.location;
        if (REDIRECTS.has(status) && location) {
          response.resume();
          if (hop >= maxRedirects) {
            throw new FetchError('TOO_MANY_REDIRECTS', `The remote server redirected more than ${maxRedirects} times.`, status, url.href);
          }
          const next = new URL(location, url);
          if (next.origin !== url.origin) {
            // Credentials meant for one origin never follow a redirect to another.
            headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !['authorization', 'cookie'].includes(name.toLowerCase())));
          }
          if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
            method = method === 'HEAD' ? 'HEAD' : 'GET';
            body = undefined;
            headers = Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-type'));
          }
          url = next;
          continue;
        }
        if ((status < 200 || status > 299) && options.throwOnHttpError !== false) {
          response.destroy();
          throw new FetchError(
            'HTTP_STATUS',
            `The remote server answered ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}.`,
            status,
            url.href,
          );
        }
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) {
          response.destroy();
          throw tooLarge(maxBytes, url.href);
        }
        const chunks: Buffer[] = [];
        let received = 0;
        try {
          for await (const chunk of response as AsyncIterable<Buffer>) {
            received += chunk.length;
            if (received > maxBytes) {
              response.destroy();
              throw tooLarge(maxBytes, url.href);
            }
            chunks.push(chunk);
          }
        } catch (err) {
          if (err instanceof FetchError) throw err;
          if (controller.signal.aborted) throw timedOut();
          throw new FetchError('CONNECTION_FAILED', `The connection to "${url.host}" broke while reading the answer.`, null, url.href);
        }
        const contentType = response.headers['content-type'] ?? null;
        return { url: url.href, status, headers: response.headers, contentType, body: Buffer.concat(chunks) };
      }
    } catch (err) {
      if (err instanceof FetchError) throw err;
      if (controller.signal.aborted) throw timedOut();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Settles with `work`, or rejects as soon as `signal` aborts (a hanging resolver cannot outlive the timeout). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolvePromise, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The 400 the API answers when a user-supplied remote file cannot be read, naming what happened. */
export function unreadableRemoteFile(err: FetchError, what = 'the remote file'): AppError {
  const subject = what.charAt(0).toUpperCase() + what.slice(1);
  const status = err.status !== null ? ` (HTTP ${err.status})` : '';
  return new AppError(400, 'BAD_REQUEST', `${subject} could not be read${status}: ${err.message}`, {
    fetch: { reason: err.reason, status: err.status, url: err.url },
  });
}

const tooLarge = (maxBytes: number, url: string) =>
  new FetchError('TOO_LARGE', `The remote file is too large (the limit is ${formatBytes(maxBytes)}).`, null, url);
