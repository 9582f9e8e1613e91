import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress } from './address-policy.js';
import { createOutboundPolicy, FetchError, type ResolvedAddress } from './outbound-policy.js';

/** A TCP server on loopback that counts connections: the service a refused connection must never reach. */
let server: net.Server;
let port: number;
let connections = 0;
beforeAll(async () => {
  server = net.createServer((socket) => {
    connections++;
    socket.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const resolvingTo =
  (...addresses: string[]) =>
  async (): Promise<ResolvedAddress[]> =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

/** Connects with the guard's lookup, as an HTTP client's connection pool does; resolves with the error or null. */
function connectThrough(lookup: net.LookupFunction, host: string, options: { autoSelectFamily?: boolean; family?: number } = {}): Promise<Error | null> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, lookup, ...options });
    socket.once('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.once('error', (err) => resolve(err));
  });
}

async function refusal(work: Promise<unknown> | (() => unknown)): Promise<FetchError> {
  const err = await (typeof work === 'function' ? Promise.resolve().then(work) : work).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FetchError);
  return err as FetchError;
}

describe('outbound policy: check', () => {
  const strict = createOutboundPolicy({ allowPrivateNetwork: false, resolve: resolvingTo('93.184.216.34') });
  const open = createOutboundPolicy({ allowPrivateNetwork: true, resolve: resolvingTo('10.0.0.7') });

  it('accepts an https public host and returns the addresses to connect to', async () => {
    expect(await strict.check(new URL('https://api.example.com/v1'))).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it.each([
    ['https://127.0.0.1:8000/v1', 'ADDRESS_NOT_ALLOWED'],
    ['https://169.254.169.254/', 'ADDRESS_NOT_ALLOWED'],
    ['http://api.example.com/v1', 'PROTOCOL_NOT_ALLOWED'],
    ['ftp://api.example.com/', 'PROTOCOL_NOT_ALLOWED'],
    ['https://user:pw@api.example.com/', 'INVALID_URL'],
  ])('without private networking refuses %s (%s)', async (url, reason) => {
    expect((await refusal(strict.check(new URL(url)))).reason).toBe(reason);
  });

  it('with private networking: private hosts over http, public hosts over https only, metadata never', async () => {
    expect(await open.check(new URL('http://vllm.internal:8000/v1'))).toEqual([{ address: '10.0.0.7', family: 4 }]);
    expect(await open.check(new URL('http://127.0.0.1:11434/v1'))).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(await open.check(new URL('https://93.184.216.34/v1'))).toEqual([{ address: '93.184.216.34', family: 4 }]);
    expect(await open.check(new URL('http://93.184.216.34/v1'), { allowHttp: true })).toHaveLength(1);
    const publicHttp = await refusal(open.check(new URL('http://93.184.216.34/v1')));
    expect(publicHttp).toMatchObject({ reason: 'PROTOCOL_NOT_ALLOWED', address: { address: '93.184.216.34', kind: 'public' } });
    const metadata = await refusal(open.check(new URL('http://169.254.169.254/latest/meta-data/')));
    expect(metadata).toMatchObject({ reason: 'ADDRESS_NOT_ALLOWED', address: { address: '169.254.169.254', kind: 'metadata' } });
  });
});

describe('outbound policy: connectGuard (checked again when a connection is made)', () => {
  it('refuses an IP literal at once, before any connection (lookup never runs for a literal)', async () => {
    const policy = createOutboundPolicy({ allowPrivateNetwork: false });
    const err = await refusal(() => policy.connectGuard(new URL(`https://127.0.0.1:${port}/v1`)));
    expect(err).toMatchObject({ reason: 'ADDRESS_NOT_ALLOWED', address: { kind: 'loopback' } });
    expect((await refusal(() => policy.connectGuard(new URL(`http://api.example.com/v1`)))).reason).toBe('PROTOCOL_NOT_ALLOWED');
    const open = createOutboundPolicy({ allowPrivateNetwork: true });
    expect((await refusal(() => open.connectGuard(new URL('http://[fd00:ec2::254]/')))).address?.kind).toBe('metadata');
    expect((await refusal(() => open.connectGuard(new URL('http://93.184.216.34/v1')))).reason).toBe('PROTOCOL_NOT_ALLOWED');
  });

  it('connects to a name whose address is allowed, whichever way the socket asks (one address, all, by family)', async () => {
    const asPublic = (address: string) => (address === '127.0.0.1' ? 'public' : classifyAddress(address));
    const policy = createOutboundPolicy({ allowPrivateNetwork: false, resolve: resolvingTo('127.0.0.1'), classify: asPublic });
    const { lookup } = policy.connectGuard(new URL(`https://provider.test:${port}/v1`));
    const before = connections;
    expect(await connectThrough(lookup, 'provider.test', { autoSelectFamily: false })).toBeNull();
    expect(await connectThrough(lookup, 'provider.test', { autoSelectFamily: true })).toBeNull();
    expect(await connectThrough(lookup, 'provider.test', { autoSelectFamily: false, family: 4 })).toBeNull();
    await expect.poll(() => connections).toBe(before + 3);
  });

  it('refuses a name that now resolves to a loopback or metadata address, without connecting (DNS rebinding)', async () => {
    let answer = ['93.184.216.34'];
    const policy = createOutboundPolicy({ allowPrivateNetwork: false, resolve: async () => resolvingTo(...answer)() });
    const { lookup } = policy.connectGuard(new URL(`https://provider.test:${port}/v1`));
    const before = connections;
    answer = ['127.0.0.1'];
    const loopback = await connectThrough(lookup, 'provider.test');
    expect(loopback).toBeInstanceOf(FetchError);
    expect(loopback).toMatchObject({
      reason: 'ADDRESS_NOT_ALLOWED',
      message: expect.stringContaining('127.0.0.1 (loopback) of "provider.test" is not allowed'),
    });
    answer = ['93.184.216.34', '169.254.169.254'];
    expect(await connectThrough(lookup, 'provider.test', { autoSelectFamily: true })).toMatchObject({
      reason: 'ADDRESS_NOT_ALLOWED',
      address: { kind: 'metadata' },
    });
    expect(connections).toBe(before);
  });

  it('with private networking, an http origin that now resolves public is refused at connect time', async () => {
    let answer = '127.0.0.1';
    const policy = createOutboundPolicy({ allowPrivateNetwork: true, resolve: async () => resolvingTo(answer)() });
    const { lookup } = policy.connectGuard(new URL(`http://llm.internal:${port}/v1`));
    const before = connections;
    expect(await connectThrough(lookup, 'llm.internal')).toBeNull();
    answer = '93.184.216.34';
    expect(await connectThrough(lookup, 'llm.internal')).toMatchObject({ reason: 'PROTOCOL_NOT_ALLOWED' });
    await expect.poll(() => connections).toBe(before + 1);
  });

  it('reports a name that does not resolve', async () => {
    const policy = createOutboundPolicy({
      allowPrivateNetwork: false,
      resolve: async () => {
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    const err = await connectThrough(policy.connectGuard(new URL('https://nowhere.invalid/')).lookup, 'nowhere.invalid');
    expect(err).toMatchObject({ reason: 'DNS_FAILED', message: 'The host "nowhere.invalid" could not be found (ENOTFOUND).' });
  });
});
