import { and, eq } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { payments } from '../../src/db/schema/payments.js';
import { topUpOrders } from '../../src/db/schema/topup.js';
import { createPaymentsService } from '../../src/modules/payments/service.js';
import { liveEnv, startFakeGateway, type FakeGateway } from '../helpers/fake-gateways.js';
import { PAYMENT_TEST_ENV, paymentFixtures, SUCCESS_URL, CANCEL_URL } from '../helpers/payments.js';
import { sharedDatabase, type SharedDatabase } from '../helpers/shared-database.js';
import { json, type TestApp } from '../helpers/test-app.js';

/**
 * Sandbox checkouts grant plans and tokens for a button press, so they run only where asked for: by default in
 * development and test while no channel is live, never in production unless PAYMENTS_SANDBOX=true. Several instances
 * of the service on one database stand for the same deployment restarted with other settings: a checkout opened while
 * a channel ran in sandbox must not be payable on the sandbox page once that channel is live or sandbox is off.
 */
const ALL = ['card_global', 'wallet_global', 'card_regional', 'wallet_regional_1', 'wallet_regional_2', 'dcb'];
const METRICS = { METRICS_TOKEN: 'a-metrics-token-for-tests' };

let shared: SharedDatabase;
let card: FakeGateway;
const started: BuiltApp[] = [];
/** Test mode, no credentials: every channel in sandbox. */
let sandboxed: TestApp;
/** card_global live (fake gateway), PAYMENTS_SANDBOX unset. */
let liveCard: TestApp;
/** card_global live, PAYMENTS_SANDBOX=true: the others in sandbox beside it. */
let liveCardAndSandbox: TestApp;
/** NODE_ENV=production, no credentials, PAYMENTS_SANDBOX unset. */
let production: TestApp;

async function instance(env: Record<string, string>): Promise<TestApp> {
  const built = await shared.instance({ env: { ...PAYMENT_TEST_ENV, ...env } });
  started.push(built);
  return { ...built, clock: shared.clock, dataDir: shared.dataDir, close: () => built.app.close() };
}

beforeAll(async () => {
  shared = await sharedDatabase('sandbox-modes');
  card = await startFakeGateway('card_global', { app: () => liveCard });
  sandboxed = await instance({});
  liveCard = await instance(liveEnv([card]));
  liveCardAndSandbox = await instance({ ...liveEnv([card]), PAYMENTS_SANDBOX: 'true' });
  production = await instance({ NODE_ENV: 'production', ...METRICS });
});
afterAll(async () => {
  for (const built of started) await built.app.close();
  await card?.close();
  await shared?.close();
});

const slugsOn = async (t: TestApp) => json<Array<{ slug: string }>>(await t.app.inject({ method: 'GET', url: '/v1/payments/channels' })).map((c) => c.slug);
const balanceOf = async (t: TestApp, token: string) =>
  Number(json(await t.app.inject({ method: 'GET', url: '/v1/credits/balance', headers: { authorization: `Bearer ${token}` } })).tokens);
const paymentsOf = (t: TestApp, userId: string) => t.platform.db.select().from(payments).where(eq(payments.userId, userId));

/** The sandbox page of a checkout and its Pay button, sent to `t` exactly as the page's form would send them. */
async function sandboxPageAndPay(t: TestApp, redirectUrl: string) {
  const url = new URL(redirectUrl);
  const page = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  const pay = await t.app.inject({
    method: 'POST',
    url: url.pathname,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ t: url.searchParams.get('t')!, action: 'pay' }).toString(),
  });
  return { page, pay };
}

describe('which channels are offered', () => {
  it('with one channel live, the channels without credentials are not offered in sandbox; checkout on one is refused', async () => {
    expect(await slugsOn(sandboxed)).toEqual(ALL);
    expect(await slugsOn(liveCard)).toEqual(['card_global']);
    const f = paymentFixtures(liveCard);
    const c = await f.customer();
    const refused = await f.checkout(c.accessToken, { planId: await f.planId('starter'), provider: 'wallet_global' });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error).toMatchObject({
      code: 'BAD_REQUEST',
      message: 'wallet_global is not available right now. Choose one of card_global (GET /v1/payments/channels).',
      details: { provider: 'wallet_global', offered: ['card_global'] },
    });
    expect(await paymentsOf(liveCard, c.user.id)).toEqual([]);
  });

  it('PAYMENTS_SANDBOX=true offers them in sandbox beside the live one', async () => {
    expect(await slugsOn(liveCardAndSandbox)).toEqual(ALL);
  });

  it('a production start without payment credentials offers no channel: checkout and top-up orders are refused, nothing is credited', async () => {
    expect(await slugsOn(production)).toEqual([]);
    const f = paymentFixtures(production);
    const c = await f.customer();
    const before = await balanceOf(production, c.accessToken);
    const plan = json(await production.app.inject({ method: 'GET', url: '/v1/plans/starter' }));
    expect(plan.payableWith).toEqual([]);

    const checkout = await f.checkout(c.accessToken, { planId: plan.id, provider: 'card_global' });
    expect(checkout.statusCode).toBe(400);
    expect(json(checkout).error).toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringContaining('No payment channel takes payments here right now') as string,
    });
    await production.services.catalog.updatePricingSettings({ topUpEnabled: true });
    const order = await f.inject(c.accessToken, 'POST', '/v1/topup/orders', {
      selection: { credits: 500 },
      provider: 'card_regional',
      successUrl: SUCCESS_URL,
      cancelUrl: CANCEL_URL,
    });
    expect(order.statusCode).toBe(400);
    expect(json(order).error.message).toContain('card_regional');

    expect(await paymentsOf(production, c.user.id)).toEqual([]);
    expect(await production.platform.db.select().from(topUpOrders).where(eq(topUpOrders.userId, c.user.id))).toEqual([]);
    expect(await balanceOf(production, c.accessToken)).toBe(before);
  });
});

describe('the sandbox page and its Pay route', () => {
  it('answer 404 for a checkout opened in sandbox once its channel is live (with or without PAYMENTS_SANDBOX): nothing is paid', async () => {
    const f = paymentFixtures(sandboxed);
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: await f.planId('starter'), provider: 'card_global' });
    const before = await balanceOf(sandboxed, c.accessToken);
    const url = new URL(session.redirectUrl);
    expect((await sandboxed.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` })).statusCode).toBe(200);

    for (const live of [liveCard, liveCardAndSandbox]) {
      const { page, pay } = await sandboxPageAndPay(live, session.redirectUrl);
      expect(page.statusCode).toBe(404);
      expect(pay.statusCode).toBe(404);
      expect(json(pay).error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('No such sandbox checkout') as string });
    }
    expect(await f.payment(session.paymentId)).toMatchObject({
      status: 'PENDING',
      fulfilment: 'NONE',
      sandbox: expect.objectContaining({ status: 'open' }) as unknown,
    });
    expect(await f.events(session.paymentId)).toEqual([]);
    expect(await balanceOf(liveCard, c.accessToken)).toBe(before);
    expect((await f.me(c.accessToken))?.plan?.slug).not.toBe('starter');
  });

  it('the attack: with sandbox off, posting the Pay form of an existing top-up order credits nothing', async () => {
    const f = paymentFixtures(sandboxed);
    const c = await f.customer();
    await sandboxed.services.catalog.updatePricingSettings({ topUpEnabled: true });
    const placed = await f.inject(c.accessToken, 'POST', '/v1/topup/orders', {
      selection: { credits: 500 },
      provider: 'card_regional',
      successUrl: SUCCESS_URL,
      cancelUrl: CANCEL_URL,
    });
    expect(placed.statusCode, placed.body).toBe(200);
    const order = json(placed);
    const before = await balanceOf(production, c.accessToken);

    const { page, pay } = await sandboxPageAndPay(production, order.redirectUrl);
    expect(page.statusCode).toBe(404);
    expect(pay.statusCode).toBe(404);

    expect(await balanceOf(production, c.accessToken)).toBe(before);
    expect(await f.payment(order.paymentId)).toMatchObject({ status: 'PENDING', fulfilment: 'NONE', tokensGranted: 0 });
    expect(await f.events(order.paymentId)).toEqual([]);
    const [row] = await production.platform.db
      .select()
      .from(topUpOrders)
      .where(and(eq(topUpOrders.id, order.orderId), eq(topUpOrders.userId, c.user.id)));
    expect(row).toMatchObject({ grantedAt: null, tokensGranted: 0 });
  });
});

describe('PAYMENTS_SANDBOX=true in production', () => {
  /** The payments module started as the service starts it, with the given settings; returns what it logged. */
  async function startLogs(env: Record<string, string>) {
    const lines: Array<{ level: number; msg: string; sandboxChannels?: string[] }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { services, platform } = sandboxed;
    const config = loadConfig({ DATA_DIR: shared.dataDir, JWT_SECRET: 'x'.repeat(40), ...METRICS, ...env });
    const service = createPaymentsService({
      db: platform.db,
      clock: platform.clock,
      logger,
      config: config.payments,
      publicBaseUrl: config.publicBaseUrl,
      frontendUrl: config.frontendUrl,
      serverSecret: config.jwtSecret,
      wallet: services.wallet,
      notifications: services.notifications,
      plans: services.plans,
      billing: services.subscriptionBilling,
    });
    await service.start();
    return lines.filter((line) => line.level >= 40);
  }

  it('logs a warning at start naming the sandbox channels; production by default and development log none', async () => {
    const warnings = await startLogs({ NODE_ENV: 'production', PAYMENTS_SANDBOX: 'true' });
    expect(warnings).toEqual([
      expect.objectContaining({ level: 40, sandboxChannels: ALL, msg: expect.stringContaining('PAYMENTS_SANDBOX=true in production') as string }),
    ]);
    expect(warnings[0]!.msg).toContain('without any money moving');
    expect(await startLogs({ NODE_ENV: 'production' })).toEqual([]);
    expect(await startLogs({ NODE_ENV: 'development' })).toEqual([]);
  });
});
