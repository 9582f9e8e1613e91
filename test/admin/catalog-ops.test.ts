import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { adminAuditLog } from '../../src/db/schema/audit.js';
import { coupons } from '../../src/db/schema/coupons.js';
import { plans } from '../../src/db/schema/plans.js';
import { CANCEL_URL, PAYMENT_TEST_ENV, SUCCESS_URL } from '../helpers/payments.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../helpers/test-app.js';

/** Models, plans and coupons through the admin API, and what customers then see. */
let t: TestApp;
let superAdmin: string;
let admin: string;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV });
  superAdmin = (await signUpAs(t, 'SUPER_ADMIN')).accessToken;
  admin = (await signUpAs(t, 'ADMIN')).accessToken;
});
afterAll(async () => t?.close());

const call = (method: 'GET' | 'POST' | 'PATCH', url: string, token: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
const auditOf = async (action: string, targetId: string) =>
  t.platform.db
    .select()
    .from(adminAuditLog)
    .where(and(eq(adminAuditLog.action, action), eq(adminAuditLog.targetId, targetId)));
const publicModels = async () =>
  json(await t.app.inject({ method: 'GET', url: '/v1/models' })).items as Array<{ id: string; slug: string; availability: string; capabilities: any }>;

describe('admin models', () => {
  it('lists every model with cursor paging, and filters by status', async () => {
    const first = await call('GET', '/v1/admin/models?limit=5', admin);
    expect(first.statusCode).toBe(200);
    expect(json(first).items).toHaveLength(5);
    const second = json(await call('GET', `/v1/admin/models?limit=5&cursor=${json(first).nextCursor}`, admin));
    expect(second.items[0].slug > json(first).items[4].slug).toBe(true);
    expect((await call('GET', '/v1/admin/models?bogus=1', admin)).statusCode).toBe(400);
    expect((await call('GET', '/v1/admin/models?cursor=garbage', admin)).statusCode).toBe(400);
  });

  it('a DISABLED model leaves GET /v1/models at once and stays visible to operators; audited with before and after', async () => {
    const [model] = await publicModels();
    const response = await call('PATCH', `/v1/admin/models/${model!.id}`, superAdmin, { status: 'DISABLED', reason: 'upstream incident' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ status: 'DISABLED', listed: false, unavailableReason: 'The model is disabled.', seedManaged: false });
    expect((await publicModels()).some((m) => m.id === model!.id)).toBe(false);
    const disabled = json(await call('GET', '/v1/admin/models?status=DISABLED', admin)).items.map((m: { id: string }) => m.id);
    expect(disabled).toContain(model!.id);
    const [audit] = await auditOf('model.update', model!.id);
    expect(audit).toMatchObject({ before: { status: 'ACTIVE' }, after: { status: 'DISABLED' }, reason: 'upstream incident' });
    expect((await call('PATCH', `/v1/admin/models/${model!.id}`, superAdmin, { status: 'ACTIVE' })).statusCode).toBe(200);
    expect((await publicModels()).some((m) => m.id === model!.id)).toBe(true);
  });

  it('a RETIRING model stays listed, shown as RETIRING', async () => {
    const model = (await publicModels())[1]!;
    expect((await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, { availability: 'RETIRING' })).statusCode).toBe(200);
    expect((await publicModels()).find((m) => m.id === model.id)?.availability).toBe('RETIRING');
  });

  it('a capability override is deep-merged over the defaults (override wins, null removes) and shows on GET /v1/models', async () => {
    const model = (await publicModels()).find((m) => m.capabilities.controls.temperature && m.capabilities.controls.maxTokens)!;
    const inherited = model.capabilities.controls.temperature;
    const response = await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, {
      capabilityOverride: { controls: { temperature: { max: 1, default: 0.5 }, maxTokens: null, topP: { type: 'number', label: 'Top P', min: 0, max: 1 } } },
    });
    expect(response.statusCode).toBe(200);
    const listed = (await publicModels()).find((m) => m.id === model.id)!;
    expect(listed.capabilities.controls.temperature).toEqual({ ...inherited, max: 1, default: 0.5 });
    expect(listed.capabilities.controls.maxTokens).toBeUndefined();
    expect(listed.capabilities.controls.topP).toEqual({ type: 'number', label: 'Top P', min: 0, max: 1 });
    expect(json(response).capabilityOverride.controls.maxTokens).toBeNull();
  });

  it('edits pricing and display fields; refuses bad input (400) and unknown ids (404) without changing anything', async () => {
    const model = (await publicModels())[2]!;
    const response = await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, {
      displayName: 'Renamed',
      pricing: { currency: 'USD', '1m_input_tokens': 10, '1m_output_tokens': 30, image: 5 },
    });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ displayName: 'Renamed', pricing: { currency: 'USD', '1m_input_tokens': 10 } });
    expect((await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, { status: 'GONE' })).statusCode).toBe(400);
    expect((await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, { pricing: { currency: 'usd' } })).statusCode).toBe(400);
    expect((await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, {})).statusCode).toBe(400);
    expect((await call('PATCH', `/v1/admin/models/${model.id}`, superAdmin, { capabilityOverride: { controls: { x: { type: 'weird' } } } })).statusCode).toBe(
      400,
    );
    expect((await call('PATCH', '/v1/admin/models/01900000-0000-7000-8000-000000000000', superAdmin, { status: 'ACTIVE' })).statusCode).toBe(404);
    expect((await call('GET', '/v1/admin/models/01900000-0000-7000-8000-000000000000', admin)).statusCode).toBe(404);
    expect((await call('PATCH', `/v1/admin/models/${model.id}`, admin, { displayName: 'x' })).statusCode).toBe(403);
    expect(json(await call('GET', `/v1/admin/models/${model.id}`, admin)).displayName).toBe('Renamed');
  });
});

describe('admin plans', () => {
  let planId: string;

  it('creates a plan with an allow-list and channels (audited); it is on sale at once', async () => {
    const [model] = await publicModels();
    const response = await call('POST', '/v1/admin/plans', superAdmin, {
      slug: 'ops-pro',
      name: 'Ops Pro',
      interval: 'MONTHLY',
      priceCents: 99_900,
      currency: 'bdt',
      tokenAllowance: 1_000_000,
      allModels: false,
      modelIds: [model!.id],
    });
    expect(response.statusCode).toBe(201);
    planId = json(response).id;
    expect(json(response)).toMatchObject({ slug: 'ops-pro', currency: 'BDT', allModels: false, modelIds: [model!.id], status: 'ACTIVE' });
    const [audit] = await auditOf('plan.create', planId);
    expect(audit).toMatchObject({ before: null, after: { slug: 'ops-pro', priceCents: 99_900 } });
    const onSale = await t.app.inject({ method: 'GET', url: '/v1/plans/ops-pro' });
    expect(onSale.statusCode).toBe(200);
    expect(json(onSale).allowedModelIds).toEqual([model!.id]);
  });

  it('refuses a duplicate slug (409), unknown models or channels (400), bad fields (400)', async () => {
    const base = { slug: 'ops-pro', name: 'x', interval: 'MONTHLY', priceCents: 1, currency: 'BDT' };
    expect((await call('POST', '/v1/admin/plans', superAdmin, base)).statusCode).toBe(409);
    const unknownModel = await call('POST', '/v1/admin/plans', superAdmin, {
      ...base,
      slug: 'ops-x',
      allModels: false,
      modelIds: ['01900000-0000-7000-8000-000000000000'],
    });
    expect(unknownModel.statusCode).toBe(400);
    expect(json(unknownModel).error.message).toMatch(/Unknown model ids/);
    expect((await call('POST', '/v1/admin/plans', superAdmin, { ...base, slug: 'ops-y', allowedChannels: ['no-such-channel'] })).statusCode).toBe(400);
    expect((await call('POST', '/v1/admin/plans', superAdmin, { ...base, slug: 'Bad Slug' })).statusCode).toBe(400);
    expect((await call('POST', '/v1/admin/plans', superAdmin, { ...base, slug: 'ops-z', priceCents: -1 })).statusCode).toBe(400);
    expect(await t.platform.db.select().from(plans).where(eq(plans.slug, 'ops-x'))).toHaveLength(0);
  });

  it('edits a plan (audited before and after) and 404s an unknown one', async () => {
    const response = await call('PATCH', `/v1/admin/plans/${planId}`, superAdmin, { priceCents: 89_900, allModels: true });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ priceCents: 89_900, allModels: true, modelIds: [] });
    const [audit] = await auditOf('plan.update', planId);
    expect(audit).toMatchObject({ before: { priceCents: 99_900, allModels: false }, after: { priceCents: 89_900, allModels: true } });
    expect((await call('PATCH', '/v1/admin/plans/01900000-0000-7000-8000-000000000000', superAdmin, { name: 'x' })).statusCode).toBe(404);
    expect((await call('PATCH', `/v1/admin/plans/${planId}`, admin, { name: 'x' })).statusCode).toBe(403);
  });

  it('an archived plan is 404 by slug and at checkout, stays visible to operators, and can be restored', async () => {
    const archived = await call('PATCH', `/v1/admin/plans/${planId}`, superAdmin, { status: 'ARCHIVED' });
    expect(archived.statusCode).toBe(200);
    expect((await auditOf('plan.archive', planId))[0]).toMatchObject({ before: { status: 'ACTIVE' }, after: { status: 'ARCHIVED' } });
    expect((await t.app.inject({ method: 'GET', url: '/v1/plans/ops-pro' })).statusCode).toBe(404);
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/plans' })).items.some((p: { id: string }) => p.id === planId)).toBe(false);
    const user = await signUp(t.app);
    const checkout = await t.app.inject({
      method: 'POST',
      url: '/v1/payments/checkout',
      headers: bearer(user.accessToken),
      payload: { planId, provider: 'bkash', successUrl: SUCCESS_URL, cancelUrl: CANCEL_URL },
    });
    expect(checkout.statusCode).toBe(404);
    expect(json(checkout).error.code).toBe('NOT_FOUND');
    expect(json(await call('GET', '/v1/admin/plans', admin)).items.find((p: { id: string }) => p.id === planId).status).toBe('ARCHIVED');
    expect((await call('PATCH', `/v1/admin/plans/${planId}`, superAdmin, { status: 'ACTIVE' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/v1/plans/ops-pro' })).statusCode).toBe(200);
  });

  it('refuses to archive the internal playground plan', async () => {
    const internal = json(await call('GET', '/v1/admin/plans', admin)).items.find((p: { internal: boolean }) => p.internal);
    const response = await call('PATCH', `/v1/admin/plans/${internal.id}`, superAdmin, { status: 'ARCHIVED' });
    expect(response.statusCode).toBe(400);
  });
});

describe('admin coupons', () => {
  let couponId: string;

  it('creates a coupon (audited) and lists it as ACTIVE', async () => {
    const response = await call('POST', '/v1/admin/coupons', superAdmin, { code: 'spring25', discountType: 'PERCENT', percentOff: 25, maxRedemptions: 10 });
    expect(response.statusCode).toBe(201);
    couponId = json(response).id;
    expect(json(response)).toMatchObject({ code: 'SPRING25', percentOff: 25, state: 'ACTIVE', redeemedCount: 0 });
    expect((await auditOf('coupon.create', couponId))[0]).toMatchObject({ before: null, after: { code: 'SPRING25' } });
    const list = json(await call('GET', '/v1/admin/coupons?state=ACTIVE', admin));
    expect(list.items.map((c: { id: string }) => c.id)).toContain(couponId);
  });

  it('refuses bad coupons (400), duplicates (409), unknown plans (400); nothing is stored', async () => {
    expect((await call('POST', '/v1/admin/coupons', superAdmin, { code: 'SPRING25', discountType: 'PERCENT', percentOff: 10 })).statusCode).toBe(409);
    expect((await call('POST', '/v1/admin/coupons', superAdmin, { code: 'BAD1', discountType: 'PERCENT', percentOff: 101 })).statusCode).toBe(400);
    expect((await call('POST', '/v1/admin/coupons', superAdmin, { code: 'BAD2', discountType: 'FIXED', amountOffCents: 100 })).statusCode).toBe(400);
    expect(
      (
        await call('POST', '/v1/admin/coupons', superAdmin, {
          code: 'BAD3',
          discountType: 'PERCENT',
          percentOff: 5,
          planIds: ['01900000-0000-7000-8000-000000000000'],
        })
      ).statusCode,
    ).toBe(400);
    expect((await call('POST', '/v1/admin/coupons', admin, { code: 'BAD4', discountType: 'PERCENT', percentOff: 5 })).statusCode).toBe(403);
    const stored = await t.platform.db.select().from(coupons);
    expect(stored.map((c) => c.code).filter((code) => code.startsWith('BAD'))).toEqual([]);
  });

  it('expires a coupon now (audited); a customer then gets the expired answer', async () => {
    const response = await call('POST', `/v1/admin/coupons/${couponId}/expire`, superAdmin, { reason: 'campaign over' });
    expect(response.statusCode).toBe(200);
    expect(json(response).state).toBe('EXPIRED');
    expect((await auditOf('coupon.expire', couponId))[0]).toMatchObject({
      before: { state: 'ACTIVE', endsAt: null },
      after: { state: 'EXPIRED' },
      reason: 'campaign over',
    });
    const user = await signUp(t.app);
    const paid = json(await t.app.inject({ method: 'GET', url: '/v1/plans' })).items.find((p: { priceCents: number }) => p.priceCents > 0);
    const preview = await t.app.inject({
      method: 'POST',
      url: '/v1/subscriptions/coupons/preview',
      headers: bearer(user.accessToken),
      payload: { code: 'SPRING25', planId: paid.id },
    });
    expect(preview.statusCode).toBe(400);
    expect(json(preview).error.message).toMatch(/expired/);
    expect(json(await call('GET', '/v1/admin/coupons?state=EXPIRED', admin)).items.map((c: { id: string }) => c.id)).toContain(couponId);
    expect((await call('POST', '/v1/admin/coupons/01900000-0000-7000-8000-000000000000/expire', superAdmin, {})).statusCode).toBe(404);
    expect((await call('GET', `/v1/admin/coupons/${couponId}`, admin)).statusCode).toBe(200);
  });
});
