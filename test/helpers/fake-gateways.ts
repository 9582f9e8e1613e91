import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inMemorySimStore, type GatewaySimulator } from '../../src/modules/payments/gateways/common.js';
import { channelPlugin } from '../../src/modules/payments/gateways/index.js';
import { SANDBOX_BASE_URL } from '../../src/modules/payments/gateways/plugin.js';
import type { CallbackInput } from '../../src/modules/payments/types.js';
import type { TestApp } from './test-app.js';

/**
 * A payment gateway on a real local HTTP port, speaking its channel's wire format (the same simulated gateway the
 * sandbox uses, with its own in-memory state and live credentials), so an adapter in live mode talks to it over HTTP.
 * Its callbacks go to the app's webhook route through HTTP injection.
 */
export interface FakeGateway {
  slug: string;
  url: string;
  sim: GatewaySimulator;
  store: ReturnType<typeof inMemorySimStore>;
  /** Requests it received (method and path), for assertions. */
  seen: string[];
  /** Answers every request with HTTP 500 while true (a gateway refusing sessions). */
  failing: boolean;
  /** While true, callbacks the gateway sends are kept in `held` instead of reaching the app. */
  hold: boolean;
  held: CallbackInput[];
  close(): Promise<void>;
}

const pem = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
const merchant = pem();
const gateway = pem();

/** Live credentials per channel (suffix → value), as the app's `<CHANNEL>_...` variables and the fake's own view. */
export const LIVE_VALUES: Record<string, Record<string, string>> = {
  card_global: { SECRET_KEY: 'sk_test_fake_gateway', WEBHOOK_SECRET: 'whsec_fake_gateway_secret' },
  wallet_global: { CLIENT_ID: 'client-id-fake', CLIENT_SECRET: 'client-secret-fake', WEBHOOK_ID: 'WH-FAKE-0001' },
  card_regional: { STORE_ID: 'teststore01', STORE_PASSWORD: 'teststore01@ssl' },
  wallet_regional_1: { APP_KEY: 'app-key-fake-123456', APP_SECRET: 'app-secret-fake', USERNAME: 'sandboxTokenizedUser02', PASSWORD: 'pass-fake' },
  wallet_regional_2: { MERCHANT_ID: '683002007104225', MERCHANT_PRIVATE_KEY: merchant.privateKey, GATEWAY_PUBLIC_KEY: gateway.publicKey },
  dcb: { API_KEY: 'dcb-api-key-fake' },
};
/** The gateway side of the RSA pair (it checks the merchant's signature, signs its callbacks). */
const SIM_EXTRA: Record<string, Record<string, string>> = {
  wallet_regional_2: { MERCHANT_PUBLIC_KEY: merchant.publicKey, GATEWAY_PRIVATE_KEY: gateway.privateKey },
};

async function toRequest(req: IncomingMessage, base: string): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  return new Request(`${base}${req.url}`, { method: req.method, headers, ...(body.length > 0 ? { body } : {}) });
}

/** Sends a gateway message to the app's webhook route, as the gateway would. */
export async function deliverTo(t: TestApp, slug: string, input: CallbackInput) {
  const query = new URLSearchParams(input.query).toString();
  return t.app.inject({
    method: input.method,
    url: `/v1/payments/webhook/${slug}${query ? `?${query}` : ''}`,
    headers: input.headers as Record<string, string>,
    ...(input.rawBody ? { payload: input.rawBody } : {}),
  });
}

export async function startFakeGateway(slug: string, options: { app: () => TestApp; needsPin?: (operator: string) => boolean }): Promise<FakeGateway> {
  const store = inMemorySimStore();
  const seen: string[] = [];
  const fake = { slug, url: '', store, seen, failing: false, hold: false, held: [] as CallbackInput[] };
  const sim = channelPlugin(slug).simulator(
    SANDBOX_BASE_URL,
    { ...LIVE_VALUES[slug]!, ...SIM_EXTRA[slug] },
    {
      store,
      pageUrl: (paymentId) => `${fake.url}/hosted/${paymentId}`,
      clock: { now: () => options.app().clock.now() },
      deliver: async (input) => {
        if (fake.hold) return void fake.held.push(input);
        const response = await deliverTo(options.app(), slug, input);
        if (response.statusCode !== 200) throw new Error(`webhook answered ${response.statusCode}: ${response.body}`);
      },
      needsPin: async (operator) => options.needsPin?.(operator) ?? false,
    },
  );
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      seen.push(`${req.method} ${req.url}`);
      if (fake.failing) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal"}');
        return;
      }
      const response = await sim.handle(await toRequest(req, fake.url));
      res.writeHead(response.status, Object.fromEntries(response.headers.entries())).end(Buffer.from(await response.arrayBuffer()));
    })().catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(fake, { sim, close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
}

/** The app's environment for every channel live against its fake gateway. */
export function liveEnv(fakes: FakeGateway[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const fake of fakes) {
    const prefix = fake.slug.toUpperCase();
    for (const [suffix, value] of Object.entries(LIVE_VALUES[fake.slug]!)) env[`${prefix}_${suffix}`] = value;
    env[`${prefix}_BASE_URL`] = fake.url;
  }
  return env;
}
