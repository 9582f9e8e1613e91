import { lookup as dnsLookup } from 'node:dns/promises';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AppError } from '../http/errors.js';
import { classifyAddress, ipLiteral, type AddressClass } from './address-policy.js';

/** Why an outbound fetch failed; `message` says it in words a person can act on. */
export type FetchFailure =
  | 'INVALID_URL'
  | 'PROTOCOL_NOT_ALLOWED'
  | 'ADDRESS_NOT_ALLOWED'
  | 'DNS_FAILED'
  | 'CONNECTION_FAILED'
  | 'HTTP_STATUS'
  | 'TOO_LARGE'
  | 'TIMEOUT'
  | 'TOO_MANY_REDIRECTS';

export class FetchError extends Error {
  constructor(
    readonly reason: FetchFailure,
    message: string,
    /** The remote's HTTP status for `HTTP_STATUS` (and a redirect loop); null otherwise. */
    readonly status: number | null = null,
    readonly url: string | null = null,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

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
  /** Allow plain http to public hosts (default false: https only unless private networking is allowed). */
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

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface SafeFetcherOptions {
  allowPrivateNetwork: boolean;
  /** Name resolution (default: the system resolver, every address). */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Which addresses may be reached (default: public ones, or every one when private networking is allowed). */
  isAddressAllowed?: (address: string, kind: AddressClass) => boolean;
  userAgent?: string;
}

export type SafeFetcher = (url: string, options?: SafeFetchOptions) => Promise<SafeResponse>;

export const DEFAULT_FETCH_TIMEOUT_MS = 8_000;
export const DEFAULT_FETCH_MAX_BYTES = 15 * 1024 * 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const systemResolve = async (hostname: string): Promise<ResolvedAddress[]> =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));

export const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB` : bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} bytes`;

/**
 * An outbound HTTP client for URLs supplied by users: it resolves the host itself, refuses addresses that are not
 * public (unless private networking is allowed), connects to exactly the address it checked (no DNS rebinding
 * between check and connect), re-checks every redirect hop, and enforces a total timeout and a byte cap.
 */
export function createSafeFetcher(settings: SafeFetcherOptions): SafeFetcher {
  const resolve = settings.resolve ?? systemResolve;
  const allowed = settings.isAddressAllowed ?? ((_address: string, kind: AddressClass) => settings.allowPrivateNetwork || kind === 'public');
  const userAgent = settings.userAgent ?? 'Storefront/1.0 (media fetcher)';

  async function checkedTarget(url: URL, allowHttp: boolean): Promise<ResolvedAddress> {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new FetchError('PROTOCOL_NOT_ALLOWED', `Only https URLs can be fetched (got "${url.protocol.replace(/:$/, '')}").`, null, url.href);
    }
    if (url.protocol === 'http:' && !allowHttp && !settings.allowPrivateNetwork) {
      throw new FetchError('PROTOCOL_NOT_ALLOWED', 'Only https URLs can be fetched; plain http is not allowed.', null, url.href);
    }
    if (url.username || url.password) {
      throw new FetchError('INVALID_URL', 'URLs with a user name or password cannot be fetched.', null, url.href);
    }
    const literal = ipLiteral(url.hostname);
    const candidates: ResolvedAddress[] = literal
      ? [{ address: literal, family: literal.includes(':') ? 6 : 4 }]
      : await resolve(url.hostname).catch((err: NodeJS.ErrnoException) => {
          throw new FetchError('DNS_FAILED', `The host "${url.hostname}" could not be found (${err.code ?? 'lookup failed'}).`, null, url.href);
        });
    if (candidates.length === 0) {
      throw new FetchError('DNS_FAILED', `The host "${url.hostname}" has no address.`, null, url.href);
    }
    // A name that resolves to any non-public address is refused outright, so a mixed answer cannot be used to reach inside.
    for (const candidate of candidates) {
      const kind = classifyAddress(candidate.address);
      if (!allowed(candidate.address, kind)) {
        throw new FetchError(
          'ADDRESS_NOT_ALLOWED',
          `The address ${candidate.address} (${kind}) of "${url.hostname}" is not allowed: only public internet addresses can be fetched.`,
          null,
          url.href,
        );
      }
    }
    return candidates[0]!;
  }

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
    const timedOut = () =>
      new FetchError('TIMEOUT', `The remote server did not answer in time (limit ${Math.round(timeoutMs / 100) / 10} s).`, null, url.href);
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
          throw new FetchError('HTTP_STATUS', `The remote server answered ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}.`, status, url.href);
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
