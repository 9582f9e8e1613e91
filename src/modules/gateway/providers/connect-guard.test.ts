import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderSettings } from '../../../config.js';
import { classifyAddress } from '../../../platform/net/address-policy.js';
import { createOutboundPolicy, type OutboundPolicySettings } from '../../../platform/net/outbound-policy.js';
import { buildProviderRegistry, upstreamHttpFor } from '../routing/registry.js';
import { UpstreamError, type UpstreamCredential } from './types.js';
import { rejection } from '../../../../test/helpers/rejection.js';

/**
 * The OpenAI-compatible client checks an operator's base URL again whenever it opens a connection (DNS rebinding);
 * base URLs from the environment are the operator's own and are not checked. The upstream answers in OpenAI's wire
 * format and closes every connection, so each call opens a new one.
 */
let server: http.Server;
let port: number;
const seen: Array<{ host: string | undefined; authorization: string | undefined }> = [];
beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ host: req.headers.host, authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ choices: [{ message: { content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const settings = (baseUrl: string): Record<string, ProviderSettings> => ({
  OPENAI: { apiKeys: ['sk-env-key-0001'], baseUrl, monthlyBudgetCents: null, timeoutMs: null },
});
const openAiWith = (policy: OutboundPolicySettings, envBaseUrl = `http://127.0.0.1:${port}/v1`) =>
  buildProviderRegistry(settings(envBaseUrl), { http: upstreamHttpFor(settings(envBaseUrl), createOutboundPolicy(policy)) }).get('openai')!;
const credential = (baseUrl: string | null, apiKey = 'sk-operator-key-0002'): UpstreamCredential => ({
  accountId: 'a1',
  providerSlug: 'openai',
  apiKey,
  baseUrl,
  timeoutMs: 5_000,
});
const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hello' }], maxTokens: 16 };

const upstreamError = (work: Promise<unknown>) => rejection(work, UpstreamError);

describe('connection-time check of base URLs', () => {
  it('calls a base URL from the environment on loopback as it is (operator configuration)', async () => {
    const openai = openAiWith({ allowPrivateNetwork: false });
    const before = seen.length;
    const env = openai.accounts[0]!;
    expect((await openai.adapter.generateText(credential(env.baseUrl, env.apiKey!), request)).text).toBe('hi');
    expect(seen.slice(before)).toEqual([{ host: `127.0.0.1:${port}`, authorization: 'Bearer sk-env-key-0001' }]);
  });

  it('refuses an operator base URL on loopback, by address and by name, without sending the key', async () => {
    const openai = openAiWith({ allowPrivateNetwork: false }, 'https://proxy.example.com/v1');
    const before = seen.length;
    for (const baseUrl of [`http://127.0.0.1:${port}/v1`, `https://localhost:${port}/v1`, `https://[::ffff:127.0.0.1]:${port}/v1`]) {
      const err = await upstreamError(openai.adapter.generateText(credential(baseUrl), request));
      expect({ baseUrl, kind: err.kind, code: err.code }).toEqual({ baseUrl, kind: 'network', code: 'address_not_allowed' });
      expect(err.message).toMatch(/^The provider's base URL cannot be used: /);
      expect(err.accountFailure).toBe(true);
    }
    expect(seen.length).toBe(before);
  });

  it('checks every new connection: a name that moves from a private to a public or metadata address is refused then', async () => {
    let answer = '127.0.0.1';
    let loopbackIsPublic = false;
    const openai = openAiWith({
      allowPrivateNetwork: true,
      resolve: async () => [{ address: answer, family: 4 }],
      classify: (address) => (loopbackIsPublic && address === '127.0.0.1' ? 'public' : classifyAddress(address)),
    });
    const account = credential(`http://llm.internal:${port}/v1`);
    const before = seen.length;
    expect((await openai.adapter.generateText(account, request)).text).toBe('hi');
    expect(seen.slice(before)).toEqual([{ host: `llm.internal:${port}`, authorization: 'Bearer sk-operator-key-0002' }]);

    // The name now leads to a public address: over plain http the key would cross the internet in clear.
    loopbackIsPublic = true;
    const clear = await upstreamError(openai.adapter.generateText(account, request));
    expect(clear).toMatchObject({ code: 'address_not_allowed', message: expect.stringContaining('is a public address: use https') });
    loopbackIsPublic = false;
    answer = '169.254.169.254';
    const metadata = await upstreamError(openai.adapter.generateText(account, request));
    expect(metadata).toMatchObject({ code: 'address_not_allowed', message: expect.stringContaining('169.254.169.254 (metadata)') });
    expect(seen.length).toBe(before + 1);
  });
});
