import { createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '../../../platform/clock/clock.js';
import { AppError, badRequest } from '../../../platform/http/errors.js';
import type { CallbackInput } from '../types.js';

/** How an adapter reaches its gateway: `fetch` in live mode, the in-process sandbox gateway otherwise. */
export type Transport = (url: string, init: RequestInit) => Promise<Response>;

/** The gateway refused or did not answer: checkout answers 503, reconciliation tries again later. */
export class GatewayError extends Error {
  constructor(
    readonly channel: string,
    message: string,
    /** The gateway's HTTP status when it answered with an error; null when it did not answer. */
    readonly status: number | null = null,
  ) {
    super(`${channel}: ${message}`);
    this.name = 'GatewayError';
  }
}

export const providerUnavailable = (slug: string) =>
  new AppError(503, 'PROVIDER_UNAVAILABLE', `Provider ${slug} unavailable. Try again in a moment or choose another payment provider.`, { provider: slug });

/** A callback that is not proven genuine: nothing is recorded or changed. */
export const invalidCallback = (slug: string, why: string) => badRequest(`The ${slug} callback was refused: ${why}.`, { provider: slug });

export const liveTransport =
  (timeoutMs = 15_000): Transport =>
  (url, init) =>
    fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });

export async function call<T>(transport: Transport, channel: string, url: string, init: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await transport(url, init);
  } catch (err) {
    throw new GatewayError(channel, `no answer from ${new URL(url).host} (${(err as Error).message})`);
  }
  const text = await response.text();
  if (!response.ok) throw new GatewayError(channel, `HTTP ${response.status} from ${new URL(url).pathname}: ${text.slice(0, 200)}`, response.status);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new GatewayError(channel, `unreadable answer from ${new URL(url).pathname}`);
  }
}

export const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Minor units as the decimal string most gateways take ("1234.50" for 123450). Exact for any 64-bit amount. */
export function toDecimal(minor: number): string {
  const big = BigInt(minor);
  return `${big / 100n}.${(big % 100n).toString().padStart(2, '0')}`;
}

/** The inverse of `toDecimal`; null when the text is not a plain non-negative amount with at most 2 decimals. */
export function fromDecimal(text: unknown): number | null {
  if (typeof text !== 'string' && typeof text !== 'number') return null;
  const match = /^(\d{1,16})(?:\.(\d{1,2}))?$/.exec(String(text).trim());
  if (!match) return null;
  const value = BigInt(match[1]!) * 100n + BigInt((match[2] ?? '0').padEnd(2, '0'));
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(value);
}

export const header = (input: CallbackInput, name: string): string | undefined => input.headers[name.toLowerCase()];

export function parseJsonBody(slug: string, raw: string): Record<string, any> {
  try {
    const value = JSON.parse(raw) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, any>;
  } catch {
    // falls through
  }
  throw invalidCallback(slug, 'the body is not a JSON object');
}

export const gatewayId = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;

/** A sandbox credential derived from the service's key, the same on every instance. */
export const sandboxSecret = (serverSecret: string, name: string) =>
  createHmac('sha256', serverSecret).update(`storefront/payments-sandbox/${name}`).digest('hex');

/** The sandbox gateway's stored state of one checkout (kept with the payment, so every instance sees it). */
export type SimState = Record<string, any> & { paymentId: string; status: 'open' | 'paid' | 'cancelled' | 'failed' | 'refunded' };

export interface SimStore {
  load(paymentId: string): Promise<SimState | null>;
  save(paymentId: string, state: SimState): Promise<void>;
  /** The checkout whose gateway reference (`state.ref`) this is. */
  findByRef(ref: string): Promise<SimState | null>;
}

/** What every simulated gateway gets: storage, the sandbox page address, the clock, and how to call our webhook. */
export interface SimContext {
  store: SimStore;
  pageUrl(paymentId: string): string;
  clock: Clock;
  /** Sends a callback to our webhook route (server-side). */
  deliver(input: CallbackInput): Promise<void>;
}

export type SandboxAction = 'pay' | 'cancel' | 'fail';

/** A simulated gateway: its API (answers the adapter's requests) and the buttons of the sandbox page. */
export interface GatewaySimulator {
  handle(request: Request): Promise<Response>;
  /** A button on the sandbox page: moves the checkout and returns the callback the gateway sends (or null). */
  press(paymentId: string, action: SandboxAction): Promise<CallbackInput | null>;
  /** Lines the sandbox page shows (e.g. the PIN the carrier texted). */
  pageNotes?(state: SimState): string[];
  /**
   * Carrier billing: the customer leaves the carrier subscription a paid checkout started (texts STOP to the carrier);
   * the carrier records it and returns the callback it sends (null when there is nothing to leave).
   */
  unsubscribe?(paymentId: string): Promise<CallbackInput | null>;
}

export const inMemorySimStore = (): SimStore & { states: Map<string, SimState> } => {
  const states = new Map<string, SimState>();
  return {
    states,
    async load(paymentId) {
      return states.get(paymentId) ?? null;
    },
    async save(paymentId, state) {
      states.set(paymentId, state);
    },
    async findByRef(ref) {
      return [...states.values()].find((state) => state.ref === ref) ?? null;
    },
  };
};

export async function mustLoad(store: SimStore, paymentId: string | null | undefined): Promise<SimState | null> {
  return paymentId ? store.load(paymentId) : null;
}

export const lowerHeaders = (headers: Headers | Record<string, string>): Record<string, string> => {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [k, v] of entries) out[k.toLowerCase()] = v;
  return out;
};
