import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { plans } from '../../db/schema/plans.js';
import { createTestApp, json, type TestApp } from '../../../test/helpers/test-app.js';
import { catalogFixtures } from '../../../test/helpers/catalog-fixtures.js';

let t: TestApp;
let f: ReturnType<typeof catalogFixtures>;
beforeAll(async () => {
  t = await createTestApp();
  f = catalogFixtures(t);
});
afterAll(async () => t?.close());

const get = (url: string) => t.app.inject({ method: 'GET', url });

describe('GET /v1/plans', () => {
  it('lists the active public plans by sortOrder then price, without internal or archived ones', async () => {
    const response = await get('/v1/plans');
    expect(response.statusCode).toBe(200);
    const { items } = json(response);
    expect(items.map((p: { slug: string }) => p.slug)).toEqual(['free', 'starter', 'pro', 'studio']);
    const free = items[0];
    expect(free).toEqual({
      id: expect.any(String),
      slug: 'free',
      name: 'Free',
      description: expect.any(String),
      interval: 'MONTHLY',
      priceCents: 0,
      currency: 'BDT',
      trialDays: 0,
      tokenAllowance: 1_000_000,
      sortOrder: 0,
      limits: expect.objectContaining({ tokensPerCycle: 1_000_000 }),
      features: { signupDefault: true, apiAccess: false, modelAccess: expect.any(Array) },
      allowedModelIds: expect.any(Array),
      servableModelIds: expect.any(Array),
      allowedChannels: [],
      payableWith: [],
    });
    expect(items.slice(1).every((p: { features: { apiAccess: boolean; signupDefault: boolean } }) => p.features.apiAccess && !p.features.signupDefault)).toBe(
      true,
    );
  });

  it('computes modelAccess per request from the servable models, grouped by kind with token cost per unit', async () => {
    const { items } = json(await get('/v1/plans'));
    const free = items[0];
    expect(free.servableModelIds).toHaveLength(7);
    expect(free.allowedModelIds.length).toBeGreaterThan(80);
    for (const id of free.servableModelIds) expect(free.allowedModelIds).toContain(id);
    const groups = free.features.modelAccess;
    expect(groups.map((g: { kind: string }) => g.kind)).toEqual(['TEXT', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING', 'MULTIMODAL']);
    for (const g of groups) expect(g.count).toBe(g.models.length);
    expect(groups[1].models[0]).toEqual({
      id: expect.any(String),
      slug: 'local/image',
      displayName: 'Local Image',
      provider: { slug: 'local', name: 'Local (built in)' },
      unit: 'image',
      tokensPerUnit: 67_778,
    });
    expect(groups.find((g: { kind: string }) => g.kind === 'AUDIO').models.map((m: { unit: string }) => m.unit)).toEqual(['generation', '1k_chars']);

    await t.services.catalog.setProviderStatus('groq', 'ACTIVE');
    try {
      const after = json(await get('/v1/plans/free'));
      expect(after.servableModelIds.length).toBeGreaterThan(7);
      expect(after.features.modelAccess.find((g: { kind: string }) => g.kind === 'TEXT').models.map((m: { slug: string }) => m.slug)).toContain(
        'groq/llama-3.1-8b-instant',
      );
    } finally {
      await t.services.catalog.setProviderStatus('groq', 'INACTIVE');
    }
  });

  it('rejects unknown query keys', async () => {
    expect((await get('/v1/plans?all=true')).statusCode).toBe(400);
  });
});

describe('GET /v1/plans/:slug', () => {
  it('returns a plan on sale', async () => {
    const response = await get('/v1/plans/pro');
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ slug: 'pro', name: 'Pro', priceCents: 149_900, currency: 'BDT', trialDays: 3, features: { apiAccess: true } });
  });

  it('answers 404 for unknown, archived and internal plans', async () => {
    await t.platform.db.insert(plans).values({ slug: 'old-plan', name: 'Old', interval: 'MONTHLY', priceCents: 100, currency: 'BDT', status: 'ARCHIVED' });
    t.services.plans.invalidate();
    for (const slug of ['nope', 'old-plan', 'internal-playground']) {
      for (const url of [`/v1/plans/${slug}`, `/v1/plans/${slug}/models`]) {
        const response = await get(url);
        expect(response.statusCode, url).toBe(404);
        expect(json(response).error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining(slug) });
      }
    }
    expect(json(await get('/v1/plans')).items.map((p: { slug: string }) => p.slug)).not.toContain('old-plan');
    // Longer than any slug: refused before routing (Fastify's 100-character parameter limit).
    expect((await get(`/v1/plans/${'x'.repeat(101)}`)).statusCode).toBe(414);
  });
});

describe('GET /v1/plans/:slug/models', () => {
  it('groups every servable model of the plan by kind with its token cost per unit', async () => {
    await f.limitedPlan('images-only', ['local/image', 'local/video', 'local/text']);
    const response = await get('/v1/plans/images-only/models');
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.plan).toMatchObject({ slug: 'images-only', name: 'Plan images-only' });
    expect(body.tokensPerCredit).toBe(10_000);
    expect(body.groups.map((g: { kind: string; count: number }) => [g.kind, g.count])).toEqual([
      ['TEXT', 1],
      ['IMAGE', 1],
      ['VIDEO', 1],
    ]);
    expect(body.groups[0].models[0]).toMatchObject({ slug: 'local/text', unit: '1m_output_tokens', tokensPerUnit: 2_711_112 });
    const plan = json(await get('/v1/plans/images-only'));
    expect(plan.allowedModelIds).toHaveLength(3);
    expect(plan.servableModelIds).toHaveLength(3);
  });
});

describe('plans service (read side contracts)', () => {
  it('answers isModelAllowed and featuresOf', async () => {
    const free = await t.services.plans.getBySlug('free');
    const limited = await f.limitedPlan('vision-only', ['local/vision']);
    const vision = await f.modelId('local/vision');
    const image = await f.modelId('local/image');
    expect(await t.services.plans.isModelAllowed(free!.id, image)).toBe(true);
    expect(await t.services.plans.isModelAllowed(limited.id, vision)).toBe(true);
    expect(await t.services.plans.isModelAllowed(limited.id, image)).toBe(false);
    expect(await t.services.plans.isModelAllowed('00000000-0000-0000-0000-000000000000', image)).toBe(false);
    expect(await t.services.plans.featuresOf(free!.id)).toEqual({ apiAccess: false, signupDefault: true });
    const pro = await t.services.plans.getBySlug('pro');
    expect(await t.services.plans.featuresOf(pro!.id)).toEqual({ apiAccess: true, signupDefault: false });
  });

  it('adds a model to the playground plan’s allow-list on first use, idempotently', async () => {
    const playground = await t.services.plans.playgroundPlan();
    expect(playground).toMatchObject({ internal: true, allModels: false });
    const text = await f.modelId('local/text');
    expect(await t.services.plans.isModelAllowed(playground!.id, text)).toBe(false);
    await t.services.plans.allowModel(playground!.id, text);
    await t.services.plans.allowModel(playground!.id, text);
    expect(await t.services.plans.isModelAllowed(playground!.id, text)).toBe(true);
    await t.services.plans.disallowModel(playground!.id, text);
    expect(await t.services.plans.isModelAllowed(playground!.id, text)).toBe(false);
  });

  it('seeds idempotently and leaves administrator-edited plans alone', async () => {
    expect(await t.services.plans.seed()).toEqual({ seeded: false });
    await t.platform.db.update(plans).set({ name: 'Starter (edited)', seedManaged: false }).where(eq(plans.slug, 'starter'));
    await t.platform.db.update(plans).set({ name: 'Pro (drifted)' }).where(eq(plans.slug, 'pro'));
    const { settings } = await import('../../db/schema/settings.js');
    await t.platform.db.delete(settings).where(eq(settings.key, 'seed.plans'));
    expect(await t.services.plans.seed()).toEqual({ seeded: true });
    expect((await t.services.plans.getBySlug('starter'))!.name).toBe('Starter (edited)');
    expect((await t.services.plans.getBySlug('pro'))!.name).toBe('Pro');
    expect((await t.platform.db.select().from(plans)).filter((p) => p.slug === 'free')).toHaveLength(1);
  });
});
