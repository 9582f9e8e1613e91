import { createRequire } from 'node:module';
import type { LookupFunction } from 'node:net';
import type * as Undici from 'undici';
import type { Agent, buildConnector, Pool } from 'undici';
import { FetchError } from '../../../platform/net/outbound-policy.js';
import { UpstreamError } from './types.js';

/**
 * The outbound policy for a base URL, applied when a connection is made (null: an address the operator configured,
 * trusted as it is). Its `lookup` resolves and refuses at every new connection, so a name re-pointed after the URL was
 * saved is refused then; calls on open keep-alive connections pay nothing. Throws `FetchError` to refuse at once.
 */
export type ConnectGuard = (url: URL) => { lookup: LookupFunction } | null;

/**
 * The one way out to the providers: every adapter (the OpenAI-compatible text client, the SDK clients, the media
 * adapters) connects through it, so every new connection passes the connect guard, whatever origin it goes to.
 */
export interface UpstreamHttp {
  /**
   * Node's fetch through the guarded dispatcher. A redirect is never followed: `redirect: 'error'` fails on it, anything
   * else answers it as it came (a base URL should be the final address, and following it would carry the key to
   * another host).
   */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** A keep-alive pool of its own for one origin (the text hot path caps its connections per origin). */
  pool(origin: string, connections: number): Pool;
}

// Loaded with the first connection (~5 MB of heap): a service whose models are all built in never needs it.
let undici: typeof Undici | undefined;
const loadUndici = (): typeof Undici => (undici ??= createRequire(import.meta.url)('undici') as typeof Undici);

/**
 * An undici connector that consults `guard` for the origin of each new connection: a trusted origin connects as it
 * is, another with the guard's `lookup` (each origin's connector is made once and keeps its TLS sessions). A refused
 * address fails the connection with the guard's error before connecting: an IP literal at once, a name when resolved.
 */
function guardedConnector(guard: ConnectGuard | undefined): buildConnector.connector {
  const { buildConnector: build } = loadUndici();
  const direct = build({});
  const guarded = new Map<string, buildConnector.connector>();
  return (options, callback) => {
    if (!guard) return direct(options, callback);
    const url = new URL(`${options.protocol}//${options.host}`);
    const known = guarded.get(url.origin);
    if (known) return known(options, callback);
    let checked: { lookup: LookupFunction } | null;
    try {
      checked = guard(url);
    } catch (err) {
      return callback(err as Error, null);
    }
    if (!checked) return direct(options, callback);
    const connect = build({ lookup: checked.lookup });
    guarded.set(url.origin, connect);
    connect(options, callback);
  };
}

/** An outbound client whose connections all pass `guard` (none: every origin is trusted, e.g. adapters built in tests). */
export function createUpstreamHttp(guard?: ConnectGuard): UpstreamHttp {
  let connector: buildConnector.connector | undefined;
  let agent: Agent | undefined;
  const pools = new Map<string, Pool>();
  const connectorOf = () => (connector ??= guardedConnector(guard));

  return {
    fetch: (input, init = {}) => {
      agent ??= new (loadUndici().Agent)({ connect: connectorOf() });
      const redirect = init.redirect === 'error' ? 'error' : 'manual';
      // Node's fetch takes an undici dispatcher; the npm package's Agent speaks the interface of the one Node bundles.
      return fetch(input, { ...init, redirect, dispatcher: agent as unknown } as RequestInit);
    },

    pool(origin, connections) {
      const key = `${connections} ${origin}`;
      let pool = pools.get(key);
      if (!pool) {
        // The caller's own timer bounds the wait for headers (an account may allow up to an hour); undici's
        // bodyTimeout stays as a backstop against a body that never ends.
        pool = new (loadUndici().Pool)(origin, { connections, headersTimeout: 0, connect: connectorOf() });
        pools.set(key, pool);
      }
      return pool;
    },
  };
}

/** The client of adapters made without a policy (tests; trusted configuration only). */
export const directUpstreamHttp: UpstreamHttp = createUpstreamHttp();

/**
 * The guard's refusal (or failed lookup) behind a failed call, as the pool's error: the account's fault, so it fails
 * over. Fetch and SDKs wrap it (`fetch failed`, a connection error), so the causes are searched; null when none is.
 */
export function connectRefusal(err: unknown): UpstreamError | null {
  for (let cause = err, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++) {
    if (!(cause instanceof FetchError)) continue;
    const refused = cause.reason === 'ADDRESS_NOT_ALLOWED' || cause.reason === 'PROTOCOL_NOT_ALLOWED' || cause.reason === 'INVALID_URL';
    return new UpstreamError('network', `The provider's base URL cannot be used: ${cause.message}`, null, refused ? 'address_not_allowed' : 'connection_error');
  }
  return null;
}

/** A redirect answered to a call (never followed) as the pool's error: the base URL should be the final address. */
export function redirectError(status: number, location: string | null | undefined): UpstreamError {
  const target = location ? ` to ${location}` : '';
  return new UpstreamError(
    'server',
    `The provider redirected the call${target} (HTTP ${status}); the account's base URL should be the final address.`,
    status,
    `http_${status}`,
  );
}
