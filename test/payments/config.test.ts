import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';

const base = { NODE_ENV: 'test', DATA_DIR: '/tmp/storefront-config-test', JWT_SECRET: 'x'.repeat(40) };

describe('payment channel variables', () => {
  it('a channel is live with all its variables, in sandbox with none; some is a start error naming the missing ones', () => {
    expect(loadConfig(base).payments).toEqual({ sandbox: true, sandboxInProduction: false, returnOrigins: [], live: {} });
    expect(loadConfig({ ...base, PAYMENTS_RETURN_ORIGINS: 'https://a.test/x, http://b.test:8080' }).payments.returnOrigins).toEqual([
      'https://a.test',
      'http://b.test:8080',
    ]);
    expect(() => loadConfig({ ...base, PAYMENTS_RETURN_ORIGINS: 'ftp://a.test' })).toThrow(/PAYMENTS_RETURN_ORIGINS/);
    const live = loadConfig({ ...base, CARD_GLOBAL_SECRET_KEY: 'sk_live_1', CARD_GLOBAL_WEBHOOK_SECRET: 'whsec_1' }).payments.live;
    expect(live).toEqual({ card_global: { baseUrl: 'https://api.stripe.com', values: { SECRET_KEY: 'sk_live_1', WEBHOOK_SECRET: 'whsec_1' } } });
    expect(() => loadConfig({ ...base, WALLET_GLOBAL_CLIENT_ID: 'id' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, WALLET_GLOBAL_CLIENT_ID: 'id' })).toThrow(/WALLET_GLOBAL_CLIENT_SECRET, WALLET_GLOBAL_WEBHOOK_ID must be set too/);
    expect(() => loadConfig({ ...base, DCB_API_KEY: 'k' })).toThrow(/DCB_BASE_URL must be set/);
    expect(() => loadConfig({ ...base, CARD_REGIONAL_BASE_URL: 'ftp://x' })).toThrow(/CARD_REGIONAL_BASE_URL must use http/);
    expect(() => loadConfig({ ...base, PAYMENTS_SANDBOX: 'maybe' })).toThrow(/PAYMENTS_SANDBOX must be true or false/);
  });

  it('PEM keys may come with \\n escapes; channel variables never count as AI providers', () => {
    const config = loadConfig({
      ...base,
      WALLET_REGIONAL_2_MERCHANT_ID: 'm',
      WALLET_REGIONAL_2_MERCHANT_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\\nabc\\n-----END PRIVATE KEY-----',
      WALLET_REGIONAL_2_GATEWAY_PUBLIC_KEY: 'pub',
      DCB_API_KEY: 'k',
      DCB_BASE_URL: 'https://dcb.example.test',
    });
    expect(config.payments.live.wallet_regional_2?.values.MERCHANT_PRIVATE_KEY).toBe('-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----');
    expect(config.payments.live.dcb).toEqual({ baseUrl: 'https://dcb.example.test', values: { API_KEY: 'k' } });
    expect(Object.keys(config.providers)).toEqual([]);
  });
});

describe('PAYMENTS_SANDBOX', () => {
  const prod = { ...base, NODE_ENV: 'production', METRICS_TOKEN: 'm'.repeat(16) };
  const card = { CARD_GLOBAL_SECRET_KEY: 'sk_live_1', CARD_GLOBAL_WEBHOOK_SECRET: 'whsec_1' };
  const sandboxOf = (env: Record<string, string>) => {
    const { sandbox, sandboxInProduction } = loadConfig(env).payments;
    return { sandbox, sandboxInProduction };
  };

  it('is off by default in production, on in development and test while no channel is live', () => {
    expect(sandboxOf(prod)).toEqual({ sandbox: false, sandboxInProduction: false });
    expect(sandboxOf({ ...base, NODE_ENV: 'development' })).toEqual({ sandbox: true, sandboxInProduction: false });
    expect(sandboxOf(base)).toEqual({ sandbox: true, sandboxInProduction: false });
  });

  it('is off beside a live channel unless set to true, and on in production only when set (flagged for the start-up warning)', () => {
    expect(sandboxOf({ ...base, ...card })).toEqual({ sandbox: false, sandboxInProduction: false });
    expect(sandboxOf({ ...base, ...card, PAYMENTS_SANDBOX: 'true' })).toEqual({ sandbox: true, sandboxInProduction: false });
    expect(sandboxOf({ ...prod, PAYMENTS_SANDBOX: 'true' })).toEqual({ sandbox: true, sandboxInProduction: true });
    expect(sandboxOf({ ...prod, ...card, PAYMENTS_SANDBOX: 'true' })).toEqual({ sandbox: true, sandboxInProduction: true });
    expect(sandboxOf({ ...base, PAYMENTS_SANDBOX: 'false' })).toEqual({ sandbox: false, sandboxInProduction: false });
  });
});

describe('PAYMENTS_SANDBOX=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { PAYMENTS_SANDBOX: 'false', CARD_GLOBAL_SECRET_KEY: 'sk_live_1', CARD_GLOBAL_WEBHOOK_SECRET: 'whsec_1' } });
  });
  afterAll(async () => t?.close());

  it('withholds the channels without credentials (misconfigured) and refuses them at checkout', async () => {
    const channels = json<Array<{ slug: string }>>(await t.app.inject({ method: 'GET', url: '/v1/payments/channels' }));
    expect(channels.map((c) => c.slug)).toEqual(['card_global']);
    const plan = json(await t.app.inject({ method: 'GET', url: '/v1/plans/starter' }));
    expect(plan.payableWith).toEqual(['card_global']);
  });
});
