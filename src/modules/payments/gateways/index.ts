import { generateKeyPairSync } from 'node:crypto';
import type { PaymentsConfig } from '../../../config.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter } from '../types.js';
import { createCardGlobal, simulateCardGlobal } from './card_global.js';
import { createCardRegional, simulateCardRegional } from './card_regional.js';
import { liveTransport, sandboxSecret, type GatewaySimulator, type SimContext, type SimStore, type Transport } from './common.js';
import { createDcb, simulateDcb } from './dcb.js';
import { createWalletGlobal, simulateWalletGlobal } from './wallet_global.js';
import { createWalletRegional1, simulateWalletRegional1 } from './wallet_regional_1.js';
import { createWalletRegional2, simulateWalletRegional2 } from './wallet_regional_2.js';

type Mode = 'live' | 'sandbox';
type Deps = { transport: Transport; clock: Clock; mode: Mode };

/** Builds a channel's adapter from its `<CHANNEL>_...` values (by suffix) and its base URL. */
export function adapterFor(slug: string, baseUrl: string, v: Record<string, string>, deps: Deps): ChannelAdapter {
  switch (slug) {
    case 'card_global':
      return createCardGlobal({ baseUrl, secretKey: v.SECRET_KEY!, webhookSecret: v.WEBHOOK_SECRET! }, deps);
    case 'wallet_global':
      return createWalletGlobal({ baseUrl, clientId: v.CLIENT_ID!, clientSecret: v.CLIENT_SECRET!, webhookId: v.WEBHOOK_ID! }, deps);
    case 'card_regional':
      return createCardRegional({ baseUrl, storeId: v.STORE_ID!, storePassword: v.STORE_PASSWORD! }, deps);
    case 'wallet_regional_1':
      return createWalletRegional1({ baseUrl, appKey: v.APP_KEY!, appSecret: v.APP_SECRET!, username: v.USERNAME!, password: v.PASSWORD! }, deps);
    case 'wallet_regional_2':
      return createWalletRegional2({ baseUrl, merchantId: v.MERCHANT_ID!, merchantPrivateKey: v.MERCHANT_PRIVATE_KEY!, gatewayPublicKey: v.GATEWAY_PUBLIC_KEY! }, deps);
    case 'dcb':
      return createDcb({ baseUrl, apiKey: v.API_KEY! }, deps);
    default:
      throw new Error(`unknown payment channel ${slug}`);
  }
}

let sandboxKeys: { merchant: { publicKey: string; privateKey: string }; gateway: { publicKey: string; privateKey: string } } | null = null;
/** RSA keys of the sandbox wallet_regional_2, made once per process (the sandbox signs and verifies in one process). */
function rsaSandboxKeys() {
  const pair = () => generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  return (sandboxKeys ??= { merchant: pair(), gateway: pair() });
}

/** The values a sandbox channel runs with: derived from the service's key, so every instance agrees (RSA aside). */
export function sandboxValues(slug: string, serverSecret: string): Record<string, string> {
  const secret = (name: string) => sandboxSecret(serverSecret, `${slug}/${name}`);
  switch (slug) {
    case 'card_global':
      return { SECRET_KEY: `sk_test_${secret('key')}`, WEBHOOK_SECRET: `whsec_${secret('webhook')}` };
    case 'wallet_global':
      return { CLIENT_ID: secret('client'), CLIENT_SECRET: secret('secret'), WEBHOOK_ID: `WH-${secret('webhook').slice(0, 17)}` };
    case 'card_regional':
      return { STORE_ID: `sandbox${secret('store').slice(0, 8)}`, STORE_PASSWORD: secret('password') };
    case 'wallet_regional_1':
      return { APP_KEY: secret('app'), APP_SECRET: secret('app-secret'), USERNAME: 'sandboxTokenizedUser', PASSWORD: secret('password') };
    case 'wallet_regional_2': {
      const keys = rsaSandboxKeys();
      return { MERCHANT_ID: '683002007104225', MERCHANT_PRIVATE_KEY: keys.merchant.privateKey, GATEWAY_PUBLIC_KEY: keys.gateway.publicKey };
    }
    default:
      return { API_KEY: secret('api-key') };
  }
}

/** A channel's simulated gateway speaking its wire format (used by sandbox mode, and by tests as a fake gateway). */
export function simulatorFor(slug: string, v: Record<string, string>, ctx: SimContext & { needsPin(operator: string): Promise<boolean> }): GatewaySimulator {
  const baseUrl = 'http://sandbox.invalid';
  switch (slug) {
    case 'card_global':
      return simulateCardGlobal({ baseUrl, secretKey: v.SECRET_KEY!, webhookSecret: v.WEBHOOK_SECRET! }, ctx);
    case 'wallet_global':
      return simulateWalletGlobal({ baseUrl, clientId: v.CLIENT_ID!, clientSecret: v.CLIENT_SECRET!, webhookId: v.WEBHOOK_ID! }, ctx);
    case 'card_regional':
      return simulateCardRegional({ baseUrl, storeId: v.STORE_ID!, storePassword: v.STORE_PASSWORD! }, ctx);
    case 'wallet_regional_1':
      return simulateWalletRegional1({ baseUrl, appKey: v.APP_KEY!, appSecret: v.APP_SECRET!, username: v.USERNAME!, password: v.PASSWORD! }, ctx);
    case 'wallet_regional_2': {
      const keys = v.MERCHANT_PUBLIC_KEY ? { merchantPublicKey: v.MERCHANT_PUBLIC_KEY, gatewayPrivateKey: v.GATEWAY_PRIVATE_KEY! } : { merchantPublicKey: rsaSandboxKeys().merchant.publicKey, gatewayPrivateKey: rsaSandboxKeys().gateway.privateKey };
      return simulateWalletRegional2({ baseUrl, merchantId: v.MERCHANT_ID!, merchantPrivateKey: '', gatewayPublicKey: '', ...keys }, ctx);
    }
    default:
      return simulateDcb({ baseUrl, apiKey: v.API_KEY! }, ctx);
  }
}

export interface ChannelRuntime {
  adapter: ChannelAdapter;
  simulator: GatewaySimulator | null;
}

/** Every channel: live with its credentials, in sandbox (a simulated gateway in-process) without, or absent. */
export function buildChannels(options: {
  slugs: readonly string[];
  config: PaymentsConfig;
  serverSecret: string;
  clock: Clock;
  simStore: SimStore;
  pageUrl(paymentId: string): string;
  deliver(slug: string, input: CallbackInput): Promise<void>;
  needsPin(operator: string): Promise<boolean>;
}): Map<string, ChannelRuntime> {
  const channels = new Map<string, ChannelRuntime>();
  for (const slug of options.slugs) {
    const live = options.config.live[slug as keyof PaymentsConfig['live']];
    if (live) {
      channels.set(slug, { adapter: adapterFor(slug, live.baseUrl, live.values, { transport: liveTransport(), clock: options.clock, mode: 'live' }), simulator: null });
      continue;
    }
    if (!options.config.sandbox) continue;
    const values = sandboxValues(slug, options.serverSecret);
    const simulator = simulatorFor(slug, values, {
      store: options.simStore,
      pageUrl: (paymentId) => options.pageUrl(paymentId),
      clock: options.clock,
      deliver: (input) => options.deliver(slug, input),
      needsPin: (operator) => options.needsPin(operator),
    });
    const transport: Transport = (url, init) => simulator.handle(new Request(url, init));
    channels.set(slug, { adapter: adapterFor(slug, 'http://sandbox.invalid', values, { transport, clock: options.clock, mode: 'sandbox' }), simulator });
  }
  return channels;
}
