import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../platform/clock/clock.js';
import { classifyAddress } from '../../../platform/net/address-policy.js';
import { createOutboundPolicy, type ResolveAddresses } from '../../../platform/net/outbound-policy.js';
import { buildMediaProviders } from '../routing/media-adapters.js';
import { buildProviderRegistry, upstreamHttpFor } from '../routing/registry.js';
import { UpstreamError, type UpstreamCredential } from './types.js';
import { rejection } from '../../../../test/helpers/rejection.js';

/**
 * Every provider calls out through the gateway's one outbound client, so an operator's base URL is checked at every
 * new connection for the Anthropic SDK and the media adapters as for the OpenAI-compatible client, and a redirect is
 * never followed. No traffic goes to a private or metadata range, even were the client broken: a trap listening on
 * 127.0.0.2 plays the metadata service (the policy is told it is one), and counts every connection it gets.
 */
let provider: http.Server;
let providerPort: number;
let trap: net.Server;
let trapPort: number;
let trapConnections = 0;
let redirectTo = '';

beforeAll(async () => {
  provider = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/hop')) {
        res.writeHead(302, { location: redirectTo, connection: 'close' });
        return res.end();
      }
      // Every answer closes its connection, so each call opens a new one (and is checked again).
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ data: [], has_more: false, first_id: null, last_id: null }));
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  providerPort = (provider.address() as AddressInfo).port;
  trap = net.createServer((socket) => {
    trapConnections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.2', resolve));
  trapPort = (trap.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => provider.close(() => resolve()));
  await new Promise<void>((resolve) => trap.close(() => resolve()));
});

/** Names as the operator's DNS answers them now; `lookups` lists every name the policy resolved. */
const dns = new Map<string, string>();
const lookups: string[] = [];
const resolve: ResolveAddresses = async (hostname) => {
  lookups.push(hostname);
  const address = dns.get(hostname);
  if (!address) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return [{ address, family: 4 }];
};
beforeEach(() => {
  dns.clear();
  dns.set('provider.internal', '127.0.0.1');
  dns.set('metadata.internal', '127.0.0.2');
  lookups.length = 0;
  trapConnections = 0;
});

/** The gateway's client as production builds it, private networking allowed (the fake provider is on loopback). */
function adapters() {
  const outbound = createOutboundPolicy({
    allowPrivateNetwork: true,
    resolve,
    classify: (address) => (address === '127.0.0.2' ? 'metadata' : classifyAddress(address)),
  });
  const upstream = upstreamHttpFor({}, outbound);
  const media = buildMediaProviders(new ManualClock(), undefined, upstream);
  const text = buildProviderRegistry({}, { http: upstream, mediaOnly: media.mediaOnly });
  return { anthropic: text.get('anthropic')!.adapter, elevenlabs: media.adapters.get('elevenlabs')! };
}

const credential = (providerSlug: string, baseUrl: string): UpstreamCredential => ({
  accountId: `${providerSlug}-operator`,
  providerSlug,
  apiKey: 'secret-key',
  baseUrl,
  timeoutMs: 5_000,
});
const checks = () => {
  const { anthropic, elevenlabs } = adapters();
  return [
    { name: 'anthropic', check: (baseUrl: string) => anthropic.checkCredential(credential('anthropic', baseUrl)) },
    { name: 'elevenlabs (media)', check: (baseUrl: string) => elevenlabs.checkCredential(credential('elevenlabs', baseUrl)) },
  ];
};

const upstreamError = (work: Promise<unknown>) => rejection(work, UpstreamError);

describe('the outbound client of every provider', () => {
  it('does not follow a redirect to a metadata address, by name or by IP: the call fails and nothing connects there', async () => {
    for (const { name, check } of checks()) {
      for (const target of [`http://metadata.internal:${trapPort}/latest/meta-data/`, `http://127.0.0.2:${trapPort}/latest/meta-data/`]) {
        redirectTo = target;
        const err = await upstreamError(check(`http://provider.internal:${providerPort}/hop`));
        expect({ name, target, kind: err.kind, status: err.status }).toEqual({ name, target, kind: 'server', status: 302 });
        expect(err.message).toBe(`The provider redirected the call to ${target} (HTTP 302); the account's base URL should be the final address.`);
      }
      expect(lookups.filter((host) => host !== 'provider.internal')).toEqual([]);
    }
    expect(trapConnections).toBe(0);
  });

  it('checks every new connection: a base URL whose name moves to a metadata address is refused before connecting', async () => {
    for (const { name, check } of checks()) {
      dns.set('provider.internal', '127.0.0.1');
      await check(`http://provider.internal:${providerPort}/`);
      dns.set('provider.internal', '127.0.0.2');
      const err = await upstreamError(check(`http://provider.internal:${trapPort}/`));
      expect({ name, kind: err.kind, code: err.code }).toEqual({ name, kind: 'network', code: 'address_not_allowed' });
      expect(err.message).toMatch(/^The provider's base URL cannot be used: The address 127\.0\.0\.2 \(metadata\) of "provider\.internal" is not allowed/);
    }
    expect(trapConnections).toBe(0);
  });

  it('refuses a base URL naming a metadata address outright, without resolving or connecting', async () => {
    for (const { name, check } of checks()) {
      const err = await upstreamError(check(`http://127.0.0.2:${trapPort}/latest/`));
      expect({ name, code: err.code }).toEqual({ name, code: 'address_not_allowed' });
      expect(err.message).toContain('127.0.0.2 (metadata)');
    }
    expect(lookups).toEqual([]);
    expect(trapConnections).toBe(0);
  });

  it('connects to the built-in defaults and the environment base URLs as they are (the operator configuration)', async () => {
    const outbound = createOutboundPolicy({ allowPrivateNetwork: false, resolve });
    const settings = { ELEVENLABS: { apiKeys: ['env-key'], baseUrl: `http://127.0.0.1:${providerPort}`, monthlyBudgetCents: null, timeoutMs: null } };
    const media = buildMediaProviders(new ManualClock(), undefined, upstreamHttpFor(settings, outbound));
    await media.adapters.get('elevenlabs')!.checkCredential(credential('elevenlabs', `http://127.0.0.1:${providerPort}`));
    // The same loopback address as an operator's base URL is refused: private networking is not allowed here.
    const err = await upstreamError(media.adapters.get('elevenlabs')!.checkCredential(credential('elevenlabs', `http://localhost:${providerPort}`)));
    expect(err.code).toBe('address_not_allowed');
  });
});
