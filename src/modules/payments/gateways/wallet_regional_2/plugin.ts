import { generateKeyPairSync } from 'node:crypto';
import type { ChannelPlugin } from '../plugin.js';
import { createWalletRegional2, simulateWalletRegional2 } from './gateway.js';
import { settings } from './settings.js';

type Pair = { publicKey: string; privateKey: string };
let sandboxKeys: { merchant: Pair; gateway: Pair } | null = null;
/** RSA keys of the sandbox, made once per process (the sandbox signs and verifies in one process). */
function rsaSandboxKeys() {
  const pair = () =>
    generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
  return (sandboxKeys ??= { merchant: pair(), gateway: pair() });
}

export const walletRegional2: ChannelPlugin<typeof settings> = {
  settings,
  seed: { name: 'Mobile wallet 2', sortOrder: 50 },
  traits: { autoRenews: false, supportsRecurring: false, currencies: ['BDT'], fields: [] },
  sandboxValues: () => {
    const keys = rsaSandboxKeys();
    return { MERCHANT_ID: '683002007104225', MERCHANT_PRIVATE_KEY: keys.merchant.privateKey, GATEWAY_PUBLIC_KEY: keys.gateway.publicKey };
  },
  adapter: (baseUrl, v, deps) =>
    createWalletRegional2({ baseUrl, merchantId: v.MERCHANT_ID!, merchantPrivateKey: v.MERCHANT_PRIVATE_KEY!, gatewayPublicKey: v.GATEWAY_PUBLIC_KEY! }, deps),
  // The gateway's side of the key pairs: given beside the live values (a fake gateway in tests), or the sandbox's.
  simulator: (baseUrl, v, ctx) => {
    const keys = v.MERCHANT_PUBLIC_KEY
      ? { merchantPublicKey: v.MERCHANT_PUBLIC_KEY, gatewayPrivateKey: v.GATEWAY_PRIVATE_KEY! }
      : { merchantPublicKey: rsaSandboxKeys().merchant.publicKey, gatewayPrivateKey: rsaSandboxKeys().gateway.privateKey };
    return simulateWalletRegional2({ baseUrl, merchantId: v.MERCHANT_ID!, merchantPrivateKey: '', gatewayPublicKey: '', ...keys }, ctx);
  },
};
