import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { models, providers } from '../../db/schema/catalog.js';
import { settings } from '../../db/schema/settings.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { catalogFixtures } from '../../../test/helpers/catalog-fixtures.js';

let t: TestApp;
let f: ReturnType<typeof catalogFixtures>;
beforeAll(async () => {
  t = await createTestApp();
  f = catalogFixtures(t);
});
afterAll(async () => t?.close());

const LOCAL = ['local/text', 'local/image', 'local/video', 'local/music', 'local/speech', 'local/embed', 'local/vision'];
const get = (url: string, token?: string) => t.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
const slugs = (response: { json(): unknown }) => (response.json() as { items: { slug: string }[] }).items.map((m) => m.slug);

async function withProvider<T>(slug: string, status: 'ACTIVE' | 'DEGRADED' | 'INACTIVE' | 'DISABLED', fn: () => Promise<T>): Promise<T> {
  await t.services.catalog.setProviderStatus(slug, status);
  try {
    return await fn();
  } finally {
    await t.services.catalog.setProviderStatus(slug, 'INACTIVE');
  }
}

describe('seeded catalog', () => {
  it('has the built-in local provider ACTIVE with a model of every type, and real providers INACTIVE with priced models', async () => {
    const rows = await t.platform.db.select().from(providers);
    const bySlug = new Map(rows.map((p) => [p.slug, p]));
    expect(bySlug.get('local')).toMatchObject({ status: 'ACTIVE', builtIn: true });
    for (const slug of ['openai', 'anthropic', 'google', 'openrouter', 'groq', 'stability', 'bfl', 'kling', 'runway', 'elevenlabs']) {
      expect(bySlug.get(slug)).toMatchObject({ status: 'INACTIVE', builtIn: false });
    }
    const all = await t.platform.db.select().from(models);
    expect(all.length).toBeGreaterThanOrEqual(80);
    const local = all.filter((m) => m.providerId === bySlug.get('local')!.id);
    expect(new Set(local.map((m) => m.type))).toEqual(new Set(['TEXT', 'MULTIMODAL', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING']));
    expect(
      local
        .filter((m) => m.type === 'AUDIO')
        .flatMap((m) => m.features)
        .sort(),
    ).toEqual(['MUSIC', 'TTS']);
    for (const m of all) {
      expect(m.slug.startsWith(`${rows.find((p) => p.id === m.providerId)!.slug}/`)).toBe(true);
      expect(m.pricing, m.slug).not.toBeNull();
    }
    const gpt = all.find((m) => m.slug === 'openai/gpt-4o-mini')!;
    expect(gpt.pricing).toMatchObject({ currency: 'USD', '1m_input_tokens': 15, '1m_output_tokens': 60 });
    expect(all.find((m) => m.slug === 'anthropic/claude-sonnet-4-5')!.upstreamModel).toBe('claude-sonnet-4-5-20250929');
  });

  it('is idempotent: an unchanged seed is skipped, a re-run keeps ids, activated providers and administrator edits', async () => {
    expect(await t.services.catalog.seed()).toEqual({ seeded: false });
    const before = await t.platform.db.select({ id: models.id, slug: models.slug }).from(models);
    await t.services.catalog.setProviderStatus('groq', 'ACTIVE');
    await f.setModel('openai/gpt-4o', { displayName: 'Edited by admin', seedManaged: false });
    await f.setModel('openai/gpt-4.1', { displayName: 'Overwritten by the seed' });
    const [provider] = await t.platform.db.select().from(providers).where(eq(providers.slug, 'openai'));
    await t.platform.db.insert(models).values({
      slug: 'openai/gpt-3.5-turbo-legacy',
      providerId: provider!.id,
      upstreamModel: 'gpt-3.5-turbo',
      displayName: 'Legacy',
      type: 'TEXT',
      pricing: { currency: 'USD', '1m_input_tokens': 50 },
    });
    await t.platform.db.delete(settings).where(eq(settings.key, 'seed.catalog'));

    expect(await t.services.catalog.seed()).toEqual({ seeded: true });
    const after = await t.platform.db.select().from(models);
    expect(after).toHaveLength(before.length + 1);
    for (const row of before) expect(after.find((m) => m.slug === row.slug)!.id).toBe(row.id);
    expect(after.find((m) => m.slug === 'openai/gpt-4o')!.displayName).toBe('Edited by admin');
    expect(after.find((m) => m.slug === 'openai/gpt-4.1')!.displayName).toBe('GPT-4.1');
    expect(after.find((m) => m.slug === 'openai/gpt-3.5-turbo-legacy')!.availability).toBe('RETIRED');
    const [groq] = await t.platform.db.select().from(providers).where(eq(providers.slug, 'groq'));
    expect(groq!.status).toBe('ACTIVE');
    await t.services.catalog.setProviderStatus('groq', 'INACTIVE');
    await f.setModel('openai/gpt-4o', { displayName: 'GPT-4o', seedManaged: true });
  });
});

describe('GET /v1/models', () => {
  it('lists only servable models, ordered by type then slug, with every field of the Model resource', async () => {
    const response = await get('/v1/models');
    expect(response.statusCode).toBe(200);
    const { items } = json(response);
    expect(items.map((m: { slug: string }) => m.slug)).toEqual(LOCAL);
    const text = items[0];
    expect(text).toEqual({
      id: expect.any(String),
      slug: 'local/text',
      displayName: 'Local Text',
      type: 'TEXT',
      status: 'ACTIVE',
      capabilities: { flags: { streaming: true, systemMessage: true }, controls: expect.objectContaining({ maxTokens: expect.any(Object) }), extra: {} },
      pricing: { currency: 'USD', unit: 'PROVIDER_COST_MINOR', note: expect.any(String), '1m_input_tokens': 10, '1m_output_tokens': 40 },
      cost: {
        unit: 'credits',
        tokensPerCredit: 10_000,
        tokensPerUnit: { '1m_input_tokens': 677_778, '1m_output_tokens': 2_711_112 },
        creditsPerUnit: { '1m_input_tokens': 67.78, '1m_output_tokens': 271.12 },
      },
      maxContextTokens: 8192,
      maxOutputTokens: 4096,
      description: expect.any(String),
      inputModalities: ['text', 'image'],
      outputModalities: ['text'],
      features: ['TEXT', 'VISION', 'TOOLS'],
      availability: 'AVAILABLE',
      provider: { slug: 'local', name: 'Local (built in)', status: 'ACTIVE' },
      allowed: null,
      availableOn: [],
    });
    const music = items.find((m: { slug: string }) => m.slug === 'local/music');
    expect(music.capabilities.controls).toEqual({});
  });

  it('lists a provider’s models once it is ACTIVE or DEGRADED, never while INACTIVE or DISABLED', async () => {
    await withProvider('openai', 'ACTIVE', async () => {
      const listed = slugs(await get('/v1/models'));
      expect(listed).toContain('openai/gpt-4o-mini');
      expect(listed).toContain('openai/gpt-image-1');
      await t.services.catalog.setProviderStatus('openai', 'DEGRADED');
      const degraded = json(await get('/v1/models?provider=openai')).items;
      expect(degraded.length).toBeGreaterThan(10);
      expect(degraded[0].provider.status).toBe('DEGRADED');
      await t.services.catalog.setProviderStatus('openai', 'DISABLED');
      expect(slugs(await get('/v1/models?provider=openai'))).toEqual([]);
    });
    expect(slugs(await get('/v1/models?provider=openai'))).toEqual([]);
  });

  it('hides DISABLED, RETIRED and unpriced models; shows BETA and RETIRING ones', async () => {
    await withProvider('anthropic', 'ACTIVE', async () => {
      const items = json(await get('/v1/models?provider=anthropic')).items;
      expect(items.find((m: { slug: string }) => m.slug === 'anthropic/claude-3-7-sonnet')).toMatchObject({ availability: 'RETIRING' });
    });
    await withProvider('elevenlabs', 'ACTIVE', async () => {
      expect(json(await get('/v1/models?provider=elevenlabs')).items.find((m: { slug: string }) => m.slug === 'elevenlabs/eleven_v3')).toMatchObject({
        status: 'BETA',
      });
    });
    await f.setModel('local/image', { status: 'DISABLED' });
    await f.setModel('local/video', { availability: 'RETIRED' });
    await f.setModel('local/music', { pricing: null });
    await f.setModel('local/speech', { pricing: { currency: 'USD' } });
    try {
      expect(slugs(await get('/v1/models'))).toEqual(['local/text', 'local/embed', 'local/vision']);
    } finally {
      await f.setModel('local/image', { status: 'ACTIVE' });
      await f.setModel('local/video', { availability: 'AVAILABLE' });
      await f.setModel('local/music', { pricing: { currency: 'USD', generation: 5 } });
      await f.setModel('local/speech', { pricing: { currency: 'USD', '1k_chars': 1.5 } });
    }
    expect(slugs(await get('/v1/models'))).toEqual(LOCAL);
  });

  it('filters by type, provider and capability', async () => {
    expect(slugs(await get('/v1/models?type=AUDIO'))).toEqual(['local/music', 'local/speech']);
    expect(slugs(await get('/v1/models?capability=TTS'))).toEqual(['local/speech']);
    expect(slugs(await get('/v1/models?capability=VISION'))).toEqual(['local/text', 'local/vision']);
    expect(slugs(await get('/v1/models?provider=local&type=EMBEDDING'))).toEqual(['local/embed']);
    expect(slugs(await get('/v1/models?provider=nobody'))).toEqual([]);
    await withProvider('google', 'ACTIVE', async () => {
      const video = slugs(await get('/v1/models?type=VIDEO&capability=VIDEO_GENERATION'));
      expect(video).toEqual(['google/veo-2', 'google/veo-3', 'google/veo-3-fast', 'local/video']);
    });
  });

  it('sends an ETag, answers 304 to a client that has the listing, and a new ETag once the catalog changes', async () => {
    const first = await get('/v1/models');
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(first.headers['content-type']).toContain('application/json');
    const again = await t.app.inject({ method: 'GET', url: '/v1/models', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect((await get('/v1/models?type=TEXT')).headers.etag).not.toBe(etag);
    await withProvider('deepseek', 'ACTIVE', async () => {
      const changed = await t.app.inject({ method: 'GET', url: '/v1/models', headers: { 'if-none-match': etag } });
      expect(changed.statusCode).toBe(200);
      expect(changed.headers.etag).not.toBe(etag);
      expect(slugs(changed)).toContain('deepseek/deepseek-chat');
    });
  });

  it.each([
    ['type=FOO', 'type'],
    ['capability=FLYING', 'capability'],
    ['provider=' + 'p'.repeat(65), 'provider'],
    ['sort=slug', 'sort'],
    ['limit=5', 'limit'],
  ])('answers 400 for %s', async (query, field) => {
    const response = await get(`/v1/models?${query}`);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(json(response).error)).toContain(field);
  });

  it('fills allowed from the caller’s plan: true on a granting plan, false otherwise or without a plan, null when anonymous', async () => {
    await f.limitedPlan('text-only', ['local/text']);
    const onFree = await signUp(t.app);
    const onLimited = await signUp(t.app);
    const noPlan = await signUp(t.app);
    const plan = await t.services.plans.getBySlug('text-only');
    await f.subscribe(onLimited.user.id, plan!.id);
    await f.expireAll(noPlan.user.id);

    const allowed = async (token?: string) =>
      Object.fromEntries(json(await get('/v1/models', token)).items.map((m: { slug: string; allowed: boolean | null }) => [m.slug, m.allowed]));
    expect(Object.values(await allowed(onFree.accessToken)).every((a) => a === true)).toBe(true);
    const limited = await allowed(onLimited.accessToken);
    expect(limited['local/text']).toBe(true);
    expect(limited['local/image']).toBe(false);
    expect(Object.values(await allowed(noPlan.accessToken)).every((a) => a === false)).toBe(true);
    expect(Object.values(await allowed()).every((a) => a === null)).toBe(true);
    // A stale token on this optional-auth route is an anonymous visit.
    expect(Object.values(await allowed('expired.or.bad')).every((a) => a === null)).toBe(true);

    // availableOn: the plans reaching a model, cheapest first, without the caller's own; empty when every plan reaches it.
    const onLimitedItems = json(await get('/v1/models', onLimited.accessToken)).items;
    const image = onLimitedItems.find((m: { slug: string }) => m.slug === 'local/image');
    expect(image.availableOn.map((p: { slug: string }) => p.slug)).toEqual(['free', 'starter', 'pro', 'studio']);
    expect(image.availableOn[1]).toEqual({ slug: 'starter', name: 'Starter', priceCents: 49_900 });
    expect(onLimitedItems.find((m: { slug: string }) => m.slug === 'local/text').availableOn).toEqual([]);
    const fromFree = json(await get('/v1/models', onFree.accessToken)).items.find((m: { slug: string }) => m.slug === 'local/image');
    expect(fromFree.availableOn.map((p: { slug: string }) => p.slug)).toEqual(['starter', 'pro', 'studio']);
    const anonymous = json(await get('/v1/models')).items.find((m: { slug: string }) => m.slug === 'local/image');
    expect(anonymous.availableOn.map((p: { slug: string }) => p.slug)).toEqual(['free', 'starter', 'pro', 'studio']);

    // /v1/models/me: limited to the plan, no `allowed`, provider without status; empty with no plan.
    const mine = json(await get('/v1/models/me', onLimited.accessToken)).items;
    expect(mine.map((m: { slug: string }) => m.slug)).toEqual(['local/text']);
    expect(mine[0]).not.toHaveProperty('allowed');
    expect(mine[0].provider).toEqual({ slug: 'local', name: 'Local (built in)' });
    expect(json(await get('/v1/models/me', noPlan.accessToken))).toEqual({ items: [] });
    expect(slugs(await get('/v1/models/me', onFree.accessToken))).toEqual(LOCAL);
    expect(slugs(await get('/v1/models/me?type=IMAGE', onFree.accessToken))).toEqual(['local/image']);
  });
});

describe('GET /v1/models/me', () => {
  it('needs a valid access token', async () => {
    expect((await get('/v1/models/me')).statusCode).toBe(401);
    expect((await get('/v1/models/me', 'bad')).statusCode).toBe(401);
  });

  it('accepts only TEXT, IMAGE, VIDEO, AUDIO and MULTIMODAL as type, and no other query key', async () => {
    const { accessToken } = await signUp(t.app);
    expect((await get('/v1/models/me?type=EMBEDDING', accessToken)).statusCode).toBe(400);
    expect((await get('/v1/models/me?provider=local', accessToken)).statusCode).toBe(400);
    expect(slugs(await get('/v1/models/me?type=MULTIMODAL', accessToken))).toEqual(['local/vision']);
  });
});

describe('catalog service for the gateway', () => {
  it('resolves a servable model with what the gateway needs', async () => {
    const model = await t.services.catalog.resolveForGateway('local/text');
    expect(model).toMatchObject({
      slug: 'local/text',
      type: 'TEXT',
      providerSlug: 'local',
      providerStatus: 'ACTIVE',
      upstreamModel: 'local-text',
      features: ['TEXT', 'VISION', 'TOOLS'],
      maxContextTokens: 8192,
      maxOutputTokens: 4096,
      capabilities: { controls: expect.any(Object), extra: {} },
    });
  });

  it('answers 404 for an unknown slug and 503 MODEL_UNAVAILABLE, with the reason, for one that cannot be served', async () => {
    await expect(t.services.catalog.resolveForGateway('nobody/nothing')).rejects.toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
    const unavailable = async (slug: string, reason: RegExp) => {
      const err = await t.services.catalog.resolveForGateway(slug).catch((e: unknown) => e);
      expect(err).toMatchObject({ statusCode: 503, code: 'MODEL_UNAVAILABLE', details: { model: slug, reason: expect.stringMatching(reason) } });
    };
    await unavailable('openai/gpt-4o', /no working credential/);
    await t.services.catalog.setProviderStatus('openai', 'DISABLED');
    await unavailable('openai/gpt-4o', /disabled/);
    await t.services.catalog.setProviderStatus('openai', 'INACTIVE');
    await f.setModel('local/image', { status: 'DISABLED' });
    await unavailable('local/image', /disabled/);
    await f.setModel('local/image', { status: 'ACTIVE' });
    await f.setModel('local/video', { availability: 'RETIRED' });
    await unavailable('local/video', /retired/);
    await f.setModel('local/video', { availability: 'AVAILABLE' });
    await f.setModel('local/music', { pricing: null });
    await unavailable('local/music', /no price/);
    await f.setModel('local/music', { pricing: { currency: 'USD', generation: 5 } });
    await expect(t.services.catalog.resolveForGateway('local/music')).resolves.toMatchObject({ slug: 'local/music' });
  });

  it('setProviderStatus answers 404 for an unknown provider', async () => {
    await expect(t.services.catalog.setProviderStatus('nobody', 'ACTIVE')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('another instance sees a provider status change through the event bus', async () => {
    const { createCatalogService } = await import('./service.js');
    const other = createCatalogService({ db: t.platform.db, clock: t.clock, events: t.platform.events });
    expect((await other.list({ provider: 'mistral' })).length).toBe(0);
    await t.services.catalog.setProviderStatus('mistral', 'ACTIVE');
    let seen = 0;
    for (let i = 0; i < 50 && seen === 0; i++) {
      seen = (await other.list({ provider: 'mistral' })).length;
      if (seen === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(seen).toBeGreaterThan(0);
    await t.services.catalog.setProviderStatus('mistral', 'INACTIVE');
  });
});
