import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress } from './address-policy.js';
import { startServer, type TestServer } from '../../../test/helpers/plain-http-server.js';
import { rejection } from '../../../test/helpers/rejection.js';
import { FetchError } from './outbound-policy.js';
import { createSafeFetcher, type SafeFetcher } from './safe-fetch.js';

// The safe fetcher's SSRF protection: private, loopback and metadata addresses refused by address, by name and on
// every redirect hop, and the address checked being the one connected to.

/** Fails with the FetchError the promise rejects with. */
const failure = (promise: Promise<unknown>) => rejection(promise, FetchError);

const servers: TestServer[] = [];
let origin: string;
let target: TestServer;
const open: SafeFetcher = createSafeFetcher({ allowPrivateNetwork: true });
const closed: SafeFetcher = createSafeFetcher({ allowPrivateNetwork: false });

beforeAll(async () => {
  // A host on the loopback address that the refusals must never reach: an image, and an echo of the request.
  target = await startServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    switch (url.pathname) {
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
        return;
      case '/echo':
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ method: req.method, authorization: req.headers.authorization ?? null }));
        return;
      default:
        res.writeHead(500).end();
    }
  });
  servers.push(target);
  origin = target.origin;
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe('safe fetch: SSRF protection', () => {
  it('refuses loopback by address and by name, without connecting', async () => {
    const before = target.requests.length;
    const literal = await failure(closed(`https://127.0.0.1:${target.port}/image.png`));
    expect(literal.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(literal.message).toContain('127.0.0.1 (loopback)');
    const byName = await failure(closed(`http://localhost:${target.port}/image.png`, { allowHttp: true }));
    expect(byName.reason).toBe('ADDRESS_NOT_ALLOWED');
    const v6 = await failure(closed(`https://[::1]:${target.port}/`));
    expect(v6.reason).toBe('ADDRESS_NOT_ALLOWED');
    const mapped = await failure(closed(`https://[::ffff:127.0.0.1]:${target.port}/`));
    expect(mapped.reason).toBe('ADDRESS_NOT_ALLOWED');
    const decimal = await failure(closed(`https://2130706433:${target.port}/`));
    expect(decimal.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(target.requests.length).toBe(before);
  });

  it.each([
    ['https://10.0.0.1/a.png', 'private'],
    ['https://172.16.5.4/a.png', 'private'],
    ['https://192.168.1.1/a.png', 'private'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['https://169.254.10.1/', 'link-local'],
    ['https://100.64.1.1/', 'cgnat'],
    ['https://0.0.0.0/', 'unspecified'],
    ['https://224.0.0.1/', 'multicast'],
    ['https://[fd00::1]/', 'unique-local'],
    ['https://[fe80::1]/', 'link-local'],
    ['https://[::]/', 'unspecified'],
    ['https://[::ffff:10.0.0.1]/', 'private'],
  ])('refuses %s (%s)', async (url, kind) => {
    const err = await failure(closed(url, { timeoutMs: 1000 }));
    expect(err.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(err.message).toContain(`(${kind})`);
  });

  it.each([
    // odd IPv4 spellings, which the URL parser rewrites to dotted decimal
    ['http://2130706433', 'loopback'],
    ['http://0177.0.0.1', 'loopback'],
    ['http://0x7f.0.0.1', 'loopback'],
    ['http://0x7f000001', 'loopback'],
    ['http://0.0.0.0', 'unspecified'],
    ['http://[::]', 'unspecified'],
    ['http://[::1]', 'loopback'],
    // IPv6 forms of an IPv4 address: the IPv4 address decides
    ['http://[::ffff:127.0.0.1]', 'loopback'],
    ['http://[::ffff:7f00:1]', 'loopback'],
    ['http://[64:ff9b::7f00:1]', 'loopback'],
    ['http://[64:ff9b::a00:1]', 'private'],
    ['http://[2002:7f00:1::]', 'loopback'],
    ['http://[2002:a00:1::]', 'private'],
    // the other ranges that are not the internet
    ['http://[fc00::1]', 'unique-local'],
    ['http://[fdab:cdef::1]', 'unique-local'],
    ['http://[fe80::1]', 'link-local'],
    ['http://169.254.0.1', 'link-local'],
    ['http://100.100.100.100', 'cgnat'],
    ['http://239.1.2.3', 'multicast'],
    ['http://[ff02::1]', 'multicast'],
    ['http://255.255.255.255', 'broadcast'],
    ['http://240.0.0.1', 'reserved'],
    ['http://192.0.0.1', 'reserved'],
    ['http://[2001:db8::1]', 'reserved'],
  ])('refuses %s (%s) without connecting', async (base, kind) => {
    const before = target.requests.length;
    const err = await failure(closed(`${base}:${target.port}/image.png`, { allowHttp: true, timeoutMs: 1000 }));
    expect(err.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(err.message).toContain(`(${kind})`);
    expect(target.requests.length).toBe(before);
  });

  it.each([
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:0:a00:1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::a9fe:101', 'link-local'],
    ['2002:c0a8:101::1', 'private'],
  ])('refuses a name that resolves to %s (%s)', async (address, kind) => {
    const fetcher = createSafeFetcher({ allowPrivateNetwork: false, resolve: async () => [{ address, family: 6 }] });
    const err = await failure(fetcher('https://sneaky.example/a.png'));
    expect(err.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(err.message).toContain(`${address} (${kind})`);
  });

  it('refuses a name that resolves to a private address, even when another answer is public', async () => {
    const fetcher = createSafeFetcher({
      allowPrivateNetwork: false,
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '10.1.2.3', family: 4 },
      ],
    });
    const err = await failure(fetcher('https://mixed.example/a.png'));
    expect(err.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(err.message).toContain('10.1.2.3 (private)');
  });

  it('reports a name that does not resolve', async () => {
    const fetcher = createSafeFetcher({
      allowPrivateNetwork: false,
      resolve: async () => {
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    const err = await failure(fetcher('https://nowhere.invalid/a.png'));
    expect(err.reason).toBe('DNS_FAILED');
    expect(err.message).toContain('nowhere.invalid');
  });

  it('refuses plain http unless asked for, or private networking is allowed and the host is private', async () => {
    const err = await failure(closed('http://example.com/a.png'));
    expect(err.reason).toBe('PROTOCOL_NOT_ALLOWED');
    // With ALLOW_PRIVATE_NETWORK=true the same loopback http URL is fetched.
    expect((await open(`http://localhost:${target.port}/image.png`)).status).toBe(200);
  });

  it('with private networking allowed, still refuses plain http to a public address, without connecting', async () => {
    const literal = await failure(open('http://93.184.216.34/a.png'));
    expect(literal).toMatchObject({ reason: 'PROTOCOL_NOT_ALLOWED', address: { address: '93.184.216.34', kind: 'public' } });
    expect(literal.message).toBe('Plain http reaches private and loopback hosts only, and 93.184.216.34 is a public address: use https.');
    const publicName = createSafeFetcher({ allowPrivateNetwork: true, resolve: async () => [{ address: '93.184.216.34', family: 4 }] });
    const byName = await failure(publicName('http://example.com/a.png'));
    expect(byName.reason).toBe('PROTOCOL_NOT_ALLOWED');
    expect(byName.message).toContain('"example.com" (93.184.216.34) is a public address: use https');
    // A name with a public and a private answer is not private: the connection could go to either.
    const mixed = createSafeFetcher({
      allowPrivateNetwork: true,
      resolve: async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '93.184.216.34', family: 4 },
      ],
    });
    expect((await failure(mixed(`http://mixed.example:${target.port}/image.png`))).reason).toBe('PROTOCOL_NOT_ALLOWED');
  });

  it('refuses a cloud metadata service even with private networking allowed, by address and by name', async () => {
    const before = target.requests.length;
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/latest/',
      'http://[::ffff:169.254.169.254]/',
      'http://100.100.100.200/',
    ]) {
      const err = await failure(open(url, { timeoutMs: 1000 }));
      expect({ url, reason: err.reason, kind: err.address?.kind }).toEqual({ url, reason: 'ADDRESS_NOT_ALLOWED', kind: 'metadata' });
      expect(err.message).toContain('a cloud metadata service is never reachable');
    }
    const metadataName = createSafeFetcher({ allowPrivateNetwork: true, resolve: async () => [{ address: '169.254.169.254', family: 4 }] });
    expect((await failure(metadataName('http://metadata.google.internal/computeMetadata/v1/'))).reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(target.requests.length).toBe(before);
  });

  it('checks each fetch again: a name that moved from a private to a public address is refused over http (DNS rebinding)', async () => {
    let answer = '127.0.0.1';
    const fetcher = createSafeFetcher({ allowPrivateNetwork: true, resolve: async () => [{ address: answer, family: 4 }] });
    expect((await fetcher(`http://hooks.test:${target.port}/image.png`)).status).toBe(200);
    const served = target.requests.length;
    answer = '93.184.216.34';
    const err = await failure(fetcher(`http://hooks.test:${target.port}/image.png`));
    expect(err.reason).toBe('PROTOCOL_NOT_ALLOWED');
    expect(target.requests.length).toBe(served);
  });

  describe('with a stand-in public host on 127.0.0.2', () => {
    // The policy treats 127.0.0.2 as if it were a public address, so a real server can play the remote host.
    const asPublic = (address: string) => (address === '127.0.0.2' ? 'public' : classifyAddress(address));
    let internal: TestServer;
    let publicHost: TestServer;
    beforeAll(async () => {
      internal = await startServer((_req, res) => res.writeHead(200).end('internal secret'), '127.0.0.1');
      servers.push(internal);
      publicHost = await startServer((req, res) => {
        if (req.url === '/to-loopback') return void res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/secret` }).end();
        if (req.url === '/to-localhost') return void res.writeHead(307, { location: `http://localhost:${internal.port}/secret` }).end();
        if (req.url === '/to-metadata') return void res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        if (req.url === '/to-mapped') return void res.writeHead(302, { location: `http://[::ffff:127.0.0.1]:${internal.port}/secret` }).end();
        if (req.url === '/to-decimal') return void res.writeHead(302, { location: `http://2130706433:${internal.port}/secret` }).end();
        if (req.url === '/to-self') return void res.writeHead(302, { location: '/ok' }).end();
        res.writeHead(200, { 'content-type': 'text/plain' }).end('public');
      }, '127.0.0.2');
      servers.push(publicHost);
    });

    it('re-checks every redirect hop and refuses one into loopback or the metadata address', async () => {
      const fetcher = createSafeFetcher({ allowPrivateNetwork: false, classify: asPublic });
      expect((await fetcher(`${publicHost.origin}/to-self`, { allowHttp: true })).body.toString()).toBe('public');
      for (const path of ['/to-loopback', '/to-localhost', '/to-metadata', '/to-mapped', '/to-decimal']) {
        const err = await failure(fetcher(`${publicHost.origin}${path}`, { allowHttp: true }));
        expect(err.reason).toBe('ADDRESS_NOT_ALLOWED');
      }
      expect(internal.requests).toEqual([]);
    });

    it('with private networking allowed, refuses plain http to the public host without connecting, and still reaches private hosts', async () => {
      const fetcher = createSafeFetcher({ allowPrivateNetwork: true, classify: asPublic });
      const before = publicHost.requests.length;
      const err = await failure(fetcher(`${publicHost.origin}/ok`));
      expect(err).toMatchObject({ reason: 'PROTOCOL_NOT_ALLOWED', address: { address: '127.0.0.2', kind: 'public' } });
      expect(publicHost.requests.length).toBe(before);
      // A redirect from a private host to the public one over http is refused at that hop too.
      const hop = await startServer((_req, res) => res.writeHead(302, { location: `${publicHost.origin}/ok` }).end());
      servers.push(hop);
      expect((await failure(fetcher(hop.origin))).reason).toBe('PROTOCOL_NOT_ALLOWED');
      expect(publicHost.requests.length).toBe(before);
      expect((await fetcher(`http://127.0.0.1:${internal.port}/`)).body.toString()).toBe('internal secret');
      expect((await fetcher(`${publicHost.origin}/ok`, { allowHttp: true })).body.toString()).toBe('public');
    });

    it('connects to the address it checked, not to a second answer of the resolver (no DNS rebinding)', async () => {
      // The same port on 127.0.0.3 plays the internal service a rebinding attacker would point the name at.
      const rebound = await startServer((_req, res) => res.writeHead(200).end('internal'), '127.0.0.3', publicHost.port);
      servers.push(rebound);
      let calls = 0;
      const fetcher = createSafeFetcher({
        allowPrivateNetwork: false,
        classify: asPublic,
        resolve: async () => [{ address: calls++ === 0 ? '127.0.0.2' : '127.0.0.3', family: 4 }],
      });
      const response = await fetcher(`http://rebind.example:${publicHost.port}/ok`, { allowHttp: true });
      expect(response.body.toString()).toBe('public');
      expect(calls).toBe(1);
      expect(rebound.requests).toEqual([]);
    });

    it('drops the Authorization header when a redirect leaves the origin', async () => {
      const fetcher = createSafeFetcher({ allowPrivateNetwork: true });
      const echo = await startServer((req, res) => res.writeHead(200).end(JSON.stringify({ authorization: req.headers.authorization ?? null })));
      servers.push(echo);
      const hopper = await startServer((_req, res) => res.writeHead(302, { location: echo.origin }).end());
      servers.push(hopper);
      const response = await fetcher(hopper.origin, { headers: { authorization: 'Bearer secret' } });
      expect(JSON.parse(response.body.toString())).toEqual({ authorization: null });
      const sameOrigin = await fetcher(`${origin}/echo`, { headers: { authorization: 'Bearer secret' } });
      expect(JSON.parse(sameOrigin.body.toString())).toMatchObject({ authorization: 'Bearer secret' });
    });
  });
});
