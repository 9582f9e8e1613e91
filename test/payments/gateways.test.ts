import { generateKeyPairSync } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_SETTINGS, type ChannelSlug } from '../../src/modules/payments/gateways/settings.js';
import { callbackSigningText, rsaSign } from '../../src/modules/payments/gateways/wallet_regional_2/gateway.js';
import type { CallbackInput } from '../../src/modules/payments/types.js';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { deliverTo, liveEnv, startFakeGateway, type FakeGateway } from '../helpers/fake-gateways.js';
import { PAYMENT_TEST_ENV, paymentFixtures, SUCCESS_URL } from '../helpers/payments.js';

/**
 * Every channel in live mode against a local fake gateway (a real HTTP server speaking the channel's wire format):
 * checkout goes to it over HTTP, and each verification method accepts the genuine callback and refuses forged,
 * tampered, stale (where the format carries a time) and replayed ones; a genuine confirmation of another amount is
 * flagged for review.
 */
// Every channel, so the compiler asks a new one for its forged, tampered and wrong-amount cases below.
const SLUGS = CHANNEL_SETTINGS.map((settings) => settings.slug);
type Slug = ChannelSlug;

let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;
const fakes = {} as Record<Slug, FakeGateway>;
let starter: string;

beforeAll(async () => {
  for (const slug of SLUGS) fakes[slug] = await startFakeGateway(slug, { app: () => t });
  t = await createTestApp({ env: { ...liveEnv(Object.values(fakes)), ...PAYMENT_TEST_ENV } });
  f = paymentFixtures(t);
  starter = await f.planId('starter');
});
afterAll(async () => {
  await t?.close();
  for (const fake of Object.values(fakes)) await fake.close();
});

const EXTRA: Partial<Record<Slug, Record<string, string>>> = { dcb: { paymentProvider: 'BL', msisdn: '01712345678' } };
const WRONG_AMOUNT: Record<Slug, Record<string, unknown>> = {
  card_global: { amount: 49_000 },
  wallet_global: { value: '490.00' },
  card_regional: { amount: '490.00' },
  wallet_regional_1: { amount: '490.00' },
  wallet_regional_2: { amount: '490.00' },
  dcb: { amount: 49_000 },
};

async function open(slug: Slug) {
  const c = await f.customer();
  const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: slug, ...(EXTRA[slug] ? { extra: EXTRA[slug] } : {}) });
  return { c, ...session };
}

/** The gateway's genuine success message for a checkout, held back from the app. */
async function genuine(slug: Slug, paymentId: string): Promise<CallbackInput> {
  const fake = fakes[slug];
  if (slug !== 'wallet_global') return (await fake.sim.press(paymentId, 'pay'))!;
  // PayPal-style: approval on its page, then our return route captures and the gateway sends the webhook.
  await fake.sim.press(paymentId, 'pay');
  fake.hold = true;
  try {
    const back = await t.app.inject({ method: 'GET', url: `/v1/payments/return/${paymentId}?result=success` });
    expect(back.statusCode).toBe(302);
  } finally {
    fake.hold = false;
  }
  return fake.held.pop()!;
}

const withBody = (input: CallbackInput, edit: (body: Record<string, any>) => void): CallbackInput => {
  const body = JSON.parse(input.rawBody) as Record<string, any>;
  edit(body);
  return { ...input, rawBody: JSON.stringify(body) };
};

const FORGE: Record<Slug, (input: CallbackInput, paymentId: string) => Promise<CallbackInput> | CallbackInput> = {
  card_global: (input) => ({
    ...input,
    headers: { ...input.headers, 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: input.rawBody, secret: 'whsec_not_the_secret' }) },
  }),
  wallet_global: (input) => ({ ...input, headers: { ...input.headers, 'paypal-transmission-sig': Buffer.from('forged signature').toString('base64') } }),
  card_regional: (input) => ({ ...input, rawBody: input.rawBody.replace(/val_id=[^&]+/, 'val_id=val_forged_123') }),
  wallet_regional_1: async (_input, paymentId) => {
    // A "success" for a checkout nobody paid: the status query says otherwise.
    const { paymentId: unpaid } = await open('wallet_regional_1');
    void paymentId;
    const ref = (await f.payment(unpaid)).gatewayRef!;
    return { method: 'POST', headers: { 'content-type': 'application/json' }, rawBody: JSON.stringify({ paymentID: ref, status: 'success' }), query: {} };
  },
  wallet_regional_2: (input) => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return withBody(input, (body) => {
      body.signature = rsaSign(other.privateKey, callbackSigningText(body));
    });
  },
  dcb: (input) => ({ ...input, query: { ...input.query, order_tracking_id: `ot_${'ab'.repeat(16)}` } }),
};

const TAMPER: Record<Slug, (input: CallbackInput, paymentId: string) => Promise<CallbackInput> | CallbackInput> = {
  card_global: (input) => withBody(input, (body) => void (body.data.object.amount_total = 100)),
  wallet_global: (input) => withBody(input, (body) => void (body.resource.amount.value = '1.00')),
  card_regional: (input) => ({ ...input, rawBody: input.rawBody.replace('amount=499.00', 'amount=1.00') }),
  wallet_regional_1: async (_input, paymentId) => {
    // The customer cancelled on the gateway; the message is edited to claim success.
    const { paymentId: cancelled } = await open('wallet_regional_1');
    void paymentId;
    const message = (await fakes.wallet_regional_1.sim.press(cancelled, 'cancel'))!;
    return withBody(message, (body) => void (body.status = 'success'));
  },
  wallet_regional_2: (input) => withBody(input, (body) => void (body.amount = '1.00')),
  dcb: (input) => ({ ...input, query: { ...input.query, amount: '100' } }),
};

const TIMESTAMPED: Slug[] = ['card_global', 'wallet_global', 'wallet_regional_2'];

describe.each(SLUGS)('%s in live mode against its fake gateway', (slug) => {
  it('opens the checkout at the gateway over HTTP and accepts the genuine callback', async () => {
    const { c, paymentId, redirectUrl } = await open(slug);
    expect(redirectUrl.startsWith(fakes[slug].url)).toBe(true);
    expect((await f.payment(paymentId)).mode).toBe('live');
    const response = await deliverTo(t, slug, await genuine(slug, paymentId));
    expect(response.statusCode).toBe(200);
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'SUCCEEDED', fulfilment: 'FULFILLED', tokensGranted: 10_000_000 });
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'starter' } });
  });

  it('refuses a forged callback and records nothing', async () => {
    const { c, paymentId } = await open(slug);
    const message = slug === 'wallet_regional_1' ? ({} as CallbackInput) : await genuine(slug, paymentId);
    const response = await deliverTo(t, slug, await FORGE[slug](message, paymentId));
    expect(response.statusCode).toBe(400);
    expect(json(response).error.message).toContain(`The ${slug} callback was refused`);
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'PENDING', tokensGranted: 0 });
    expect(await f.events(paymentId)).toEqual([]);
  });

  it('refuses a tampered callback', async () => {
    const { c, paymentId } = await open(slug);
    const message = slug === 'wallet_regional_1' ? ({} as CallbackInput) : await genuine(slug, paymentId);
    const response = await deliverTo(t, slug, await TAMPER[slug](message, paymentId));
    expect(response.statusCode).toBe(400);
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'PENDING', tokensGranted: 0 });
  });

  if (TIMESTAMPED.includes(slug)) {
    it('refuses a stale callback (older than the 5-minute tolerance)', async () => {
      const { c, paymentId } = await open(slug);
      const message = await genuine(slug, paymentId);
      t.clock.advance(6 * 60_000);
      const response = await deliverTo(t, slug, message);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.message).toMatch(/tolerance/i);
      expect(json(await f.getPayment(await c.token(), paymentId))).toMatchObject({ status: 'PENDING' });
    });
  } else {
    it('has no time in its format: a replayed genuine callback changes nothing', async () => {
      const { c, paymentId } = await open(slug);
      const message = await genuine(slug, paymentId);
      expect(json(await deliverTo(t, slug, message)).applied).toBe('succeeded');
      const replay = await deliverTo(t, slug, message);
      expect(replay.statusCode).toBe(200);
      expect(json(replay).applied).toBe('replayed');
      expect((await f.grants({ userId: c.user.id })).filter((g) => g.paymentId === paymentId)).toHaveLength(1);
    });
  }

  it('a genuine confirmation of another amount is flagged for review, not fulfilled', async () => {
    const { c, paymentId } = await open(slug);
    const state = (await fakes[slug].store.load(paymentId))!;
    await fakes[slug].store.save(paymentId, { ...state, ...WRONG_AMOUNT[slug] });
    const response = await deliverTo(t, slug, await genuine(slug, paymentId));
    expect(response.statusCode).toBe(200);
    expect(json(response).applied).toBe('review');
    expect(json(await f.getPayment(await c.token(), paymentId))).toMatchObject({ status: 'PENDING', fulfilment: 'REVIEW', tokensGranted: 0 });
  });
});

describe('refunds through the gateway', () => {
  for (const slug of ['card_global', 'wallet_global'] as const) {
    it(`${slug}: the refund goes to the gateway's API and its refund callback books it once`, async () => {
      const { c, paymentId } = await open(slug);
      await deliverTo(t, slug, await genuine(slug, paymentId));
      const refunded = await t.services.payments.refund(paymentId);
      expect(refunded).toMatchObject({ status: 'REFUNDED', tokensTakenBack: 10_000_000, tokensUnrecovered: 0 });
      expect(fakes[slug].seen.some((line) => line.includes('refund'))).toBe(true);
      expect(await f.events(paymentId)).toContainEqual(expect.objectContaining({ outcome: 'refunded', source: 'callback' }));
      expect((await f.ledger({ userId: c.user.id })).filter((r) => r.kind === 'ADJUSTMENT')).toHaveLength(1);
      expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'starter' } });
    });
  }

  it('a partial refund made on the gateway is flagged for review and takes nothing back', async () => {
    const { c, paymentId } = await open('card_global');
    await deliverTo(t, 'card_global', await genuine('card_global', paymentId));
    const intent = (await f.payment(paymentId)).gatewayTxnId;
    const rawBody = JSON.stringify({
      id: 'evt_partial_refund_1',
      object: 'event',
      type: 'charge.refunded',
      data: { object: { id: 'ch_1', object: 'charge', payment_intent: intent, amount_refunded: 10_000, currency: 'bdt', metadata: { paymentId } } },
    });
    const signature = Stripe.webhooks.generateTestHeaderString({
      payload: rawBody,
      secret: 'whsec_fake_gateway_secret',
      timestamp: Math.floor(t.clock.now().getTime() / 1000),
    });
    const response = await deliverTo(t, 'card_global', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      rawBody,
      query: {},
    });
    expect(json(response).applied).toBe('review');
    const payment = json(await f.getPayment(c.accessToken, paymentId));
    expect(payment).toMatchObject({ status: 'SUCCEEDED', fulfilment: 'REVIEW', tokensTakenBack: 0 });
    expect(payment.reviewReason).toContain('refunded 100.00 BDT of 499.00 BDT');
  });
});

describe('the browser return carries the outcome on some gateways (verified like a callback)', () => {
  it('wallet_regional_1: the gateway redirects to our return URL with paymentID and status; the callback itself was lost', async () => {
    const { c, paymentId } = await open('wallet_regional_1');
    const message = await genuine('wallet_regional_1', paymentId); // never delivered
    const { paymentID } = JSON.parse(message.rawBody) as { paymentID: string };
    const back = await t.app.inject({
      method: 'GET',
      url: `/v1/payments/return/${paymentId}?result=success&paymentID=${paymentID}&status=success&signature=x`,
    });
    expect(back.statusCode).toBe(302);
    expect(back.headers.location).toBe(SUCCESS_URL);
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000 });
    // A forged "success" on the return changes nothing and still sends the browser on.
    const other = await open('wallet_regional_1');
    const ref = (await f.payment(other.paymentId)).gatewayRef!;
    const forged = await t.app.inject({ method: 'GET', url: `/v1/payments/return/${other.paymentId}?result=success&paymentID=${ref}&status=success` });
    expect(forged.statusCode).toBe(302);
    expect(json(await f.getPayment(other.c.accessToken, other.paymentId)).status).toBe('PENDING');
  });

  it('card_regional: the gateway posts the transaction to success_url with the browser; it is re-validated', async () => {
    const { c, paymentId } = await open('card_regional');
    const message = await genuine('card_regional', paymentId); // the IPN is lost
    const back = await t.app.inject({
      method: 'POST',
      url: `/v1/payments/return/${paymentId}?result=success`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: message.rawBody,
    });
    expect(back.statusCode).toBe(302);
    expect(back.headers.location).toBe(SUCCESS_URL);
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000 });
  });
});

describe('a saved wallet renews over the gateway API', () => {
  it('wallet_global: a recurring purchase vaults the wallet; the renewal is a merchant-initiated order on the vault id', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'wallet_global', recurring: true });
    expect(json(await deliverTo(t, 'wallet_global', await genuine('wallet_global', session.paymentId))).applied).toBe('succeeded');
    const [agreement] = json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items;
    expect(agreement).toMatchObject({ channel: 'wallet_global', status: 'ACTIVE' });
    const [sub] = await f.list(c.accessToken);
    t.clock.set(new Date(new Date(sub!.endsAt as string).getTime() + 60_000));
    await t.services.subscriptionBilling.runDue();
    fakes.wallet_global.seen.length = 0;
    await f.reconcile();
    expect(fakes.wallet_global.seen).toContain('POST /v2/checkout/orders');
    await f.eventually(async () => expect((await f.list(await c.token()))[0]).toMatchObject({ id: sub!.id, status: 'ACTIVE' }));
    expect((await f.grants({ userId: c.user.id })).length).toBe(3);
  });
});

describe('a gateway that refuses or does not answer', () => {
  it('checkout answers 503 PROVIDER_UNAVAILABLE when the gateway refuses the session', async () => {
    const c = await f.customer();
    fakes.card_global.failing = true;
    try {
      const response = await f.checkout(c.accessToken, { planId: starter, provider: 'card_global' });
      expect(response.statusCode).toBe(503);
      expect(json(response).error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', message: expect.stringContaining('Provider card_global unavailable') });
    } finally {
      fakes.card_global.failing = false;
    }
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'free' } });
  });

  it('a callback whose verification call gets no answer is 503, so the gateway sends it again', async () => {
    const { c, paymentId } = await open('card_regional');
    const message = await genuine('card_regional', paymentId);
    fakes.card_regional.failing = true;
    try {
      expect((await deliverTo(t, 'card_regional', message)).statusCode).toBe(503);
    } finally {
      fakes.card_regional.failing = false;
    }
    expect((await deliverTo(t, 'card_regional', message)).statusCode).toBe(200);
    expect(json(await f.getPayment(c.accessToken, paymentId)).status).toBe('SUCCEEDED');
  });
});
