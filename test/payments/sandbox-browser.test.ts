import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, json, signUp, type TestApp } from '../helpers/test-app.js';
import { PAYMENT_TEST_ENV } from '../helpers/payments.js';
import { freePort } from '../helpers/free-port.js';

/**
 * The sandbox checkout page is a real web page: a headless Chromium opens the redirectUrl checkout returned, presses
 * Pay, follows the gateway's return to the stored successUrl, and the plan is active afterwards. CI installs Chromium
 * (.ci/run); a machine without it skips this file (REQUIRE_CHROMIUM=1, set by .ci/run, makes its absence a failure).
 */
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.REQUIRE_CHROMIUM) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);

let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await createTestApp({ env: { PUBLIC_BASE_URL: base, ...PAYMENT_TEST_ENV } });
  await t.app.listen({ port, host: '127.0.0.1' });
  if (!available) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the sandbox checkout page over real HTTP, without a browser', () => {
  it('fetch the page, post its form, follow the redirects to the stored successUrl; the plan is active', async () => {
    const { accessToken } = await signUp(t.app);
    const plans = json(await t.app.inject({ method: 'GET', url: '/v1/plans' }));
    const starter = plans.items.find((p: { slug: string }) => p.slug === 'starter');
    const successUrl = 'https://shop.example.test/thanks';
    const auth = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' };
    const checkout = await fetch(`${base}/v1/payments/checkout`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ planId: starter.id, provider: 'wallet_regional_2', successUrl, cancelUrl: 'https://shop.example.test/cancelled' }),
    });
    expect(checkout.status).toBe(200);
    const { redirectUrl, paymentId } = (await checkout.json()) as { redirectUrl: string; paymentId: string };
    const page = await fetch(redirectUrl);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    const action = /<form method="post" action="([^"]+)">/.exec(html)![1]!;
    const token = /name="t" value="([^"]+)"/.exec(html)![1]!;
    const pressed = await fetch(`${base}${action}`, { method: 'POST', body: new URLSearchParams({ t: token, action: 'pay' }), redirect: 'manual' });
    expect(pressed.status).toBe(303);
    const back = await fetch(pressed.headers.get('location')!, { redirect: 'manual' });
    expect(back.status).toBe(302);
    expect(back.headers.get('location')).toBe(successUrl);
    const payment = (await (await fetch(`${base}/v1/payments/${paymentId}`, { headers: auth })).json()) as Record<string, unknown>;
    expect(payment).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000 });
    const subscriptions = (await (await fetch(`${base}/v1/subscriptions`, { headers: auth })).json()) as Array<Record<string, any>>;
    expect(subscriptions[0]).toMatchObject({ status: 'ACTIVE', plan: { slug: 'starter' } });
  });
});

describe.skipIf(!available)('the sandbox checkout page in headless Chromium', () => {
  it('open the redirect, press Pay, land on the success URL, see the plan active', async () => {
    const { accessToken } = await signUp(t.app);
    const plans = json(await t.app.inject({ method: 'GET', url: '/v1/plans' }));
    const starter = plans.items.find((p: { slug: string }) => p.slug === 'starter');
    const successUrl = `${base}/healthz?checkout=success`;
    const checkout = await t.app.inject({
      method: 'POST',
      url: '/v1/payments/checkout',
      headers: bearer(accessToken),
      payload: { planId: starter.id, provider: 'card_global', successUrl, cancelUrl: `${base}/healthz?checkout=cancel` },
    });
    expect(checkout.statusCode).toBe(200);
    const { redirectUrl, paymentId } = json(checkout);

    const page = await browser.newPage();
    try {
      await page.goto(redirectUrl);
      expect(await page.title()).toBe('Sandbox checkout: card_global');
      expect(await page.textContent('h1')).toBe('Pay 499.00 BDT');
      await Promise.all([page.waitForURL(successUrl), page.click('#pay')]);
      expect(page.url()).toBe(successUrl);
    } finally {
      await page.close();
    }

    // The success page is not proof of payment: the client polls, and the callback has already done its work.
    const payment = json(await t.app.inject({ method: 'GET', url: `/v1/payments/${paymentId}`, headers: bearer(accessToken) }));
    expect(payment).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000 });
    const subscriptions = json(await t.app.inject({ method: 'GET', url: '/v1/subscriptions', headers: bearer(accessToken) }));
    expect(subscriptions[0]).toMatchObject({ status: 'ACTIVE', plan: { slug: 'starter' } });
  });

  it('Cancel brings the browser to the cancel URL and nothing is charged', async () => {
    const { accessToken } = await signUp(t.app);
    const plans = json(await t.app.inject({ method: 'GET', url: '/v1/plans' }));
    const pro = plans.items.find((p: { slug: string }) => p.slug === 'pro');
    const cancelUrl = `${base}/healthz?checkout=cancel`;
    const { redirectUrl, paymentId } = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/payments/checkout',
        headers: bearer(accessToken),
        payload: { planId: pro.id, provider: 'card_regional', successUrl: `${base}/healthz?checkout=success`, cancelUrl },
      }),
    );
    const page = await browser.newPage();
    try {
      await page.goto(redirectUrl);
      await Promise.all([page.waitForURL(cancelUrl), page.click('#cancel')]);
    } finally {
      await page.close();
    }
    expect(json(await t.app.inject({ method: 'GET', url: `/v1/payments/${paymentId}`, headers: bearer(accessToken) })).status).toBe('CANCELLED');
  });
});
