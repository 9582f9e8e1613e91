import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { models } from '../../src/db/schema/catalog.js';
import { settings } from '../../src/db/schema/settings.js';
import { formatProviderCheck, needsAction, type ProviderCheckReport, type ProviderCheckResult } from '../../src/modules/catalog/provider-check.js';
import { startFakeAnthropic } from '../../src/modules/gateway/providers/anthropic/anthropic.fake.js';
import type { FakeUpstream } from '../helpers/fake-upstreams.js';
import { OPENAI_MEDIA_ERRORS, startFakeElevenLabs, startFakeOpenAiMedia, type MediaFake } from '../helpers/fake-media-upstreams.js';
import { BFL_KEYS, startFakeBfl, type BflFake } from '../../src/modules/gateway/providers/bfl/bfl.fake.js';
import { GOOGLE_LISTED_MODELS, startFakeGoogle, type GoogleFake } from '../../src/modules/gateway/providers/google/google-media.fake.js';
import { providerEnv } from '../helpers/gateway.js';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../helpers/test-app.js';

/**
 * The catalog check through the real app, against fakes that answer the model lists in each provider's shape: Google
 * (native list, no Imagen), Anthropic, OpenAI (which fails to answer in one test), ElevenLabs (a media provider with a
 * list), Black Forest Labs (no list endpoint). Mistral has no account here.
 */
let t: TestApp;
let google: GoogleFake;
let anthropic: FakeUpstream;
let openai: MediaFake;
let elevenlabs: MediaFake;
let bfl: BflFake;
let admin: string;
let superAdmin: string;

beforeAll(async () => {
  [google, anthropic, openai, elevenlabs, bfl] = await Promise.all([
    startFakeGoogle(),
    startFakeAnthropic(),
    startFakeOpenAiMedia(),
    startFakeElevenLabs(),
    startFakeBfl(),
  ]);
  t = await createTestApp({
    env: {
      ...providerEnv('GOOGLE', google.openAiBaseUrl, ['good-google-key']),
      ...providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-check-1']),
      ...providerEnv('OPENAI', openai.baseUrl, ['sk-test-1']),
      ...providerEnv('ELEVENLABS', elevenlabs.baseUrl, ['sk_eleven']),
      ...providerEnv('BFL', bfl.baseUrl, BFL_KEYS.slice(0, 1)),
      ALLOW_PRIVATE_NETWORK: 'true',
    },
  });
  admin = (await signUpAs(t, 'ADMIN')).accessToken;
  superAdmin = (await signUpAs(t, 'SUPER_ADMIN')).accessToken;
});
afterAll(async () => {
  await t?.close();
  await Promise.all([google, anthropic, openai, elevenlabs, bfl].map((fake) => fake?.close()));
});

const CHECK = '/v1/admin/catalog/provider-check';
const check = async (token = admin): Promise<ProviderCheckReport> => {
  const response = await t.app.inject({ method: 'GET', url: CHECK, headers: bearer(token) });
  expect(response.statusCode, response.body).toBe(200);
  return json(response);
};
const of = (report: ProviderCheckReport, provider: string): ProviderCheckResult => report.providers.find((p) => p.provider === provider)!;
const modelRows = () =>
  t.platform.db.select({ slug: models.slug, availability: models.availability, updatedAt: models.updatedAt }).from(models).orderBy(models.slug);

describe('GET /v1/admin/catalog/provider-check', () => {
  it('is for operators: 401 without a token, 403 FORBIDDEN for a customer', async () => {
    expect((await t.app.inject({ method: 'GET', url: CHECK })).statusCode).toBe(401);
    const user = (await signUpAs(t, 'USER')).accessToken;
    const refused = await t.app.inject({ method: 'GET', url: CHECK, headers: bearer(user) });
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error).toMatchObject({ code: 'FORBIDDEN' });
    await check(superAdmin);
  });

  it('checks each configured provider with its list endpoint and reports what differs; Imagen, retired, is not a finding', async () => {
    const from = { google: google.requests.length, anthropic: anthropic.requests.length, elevenlabs: elevenlabs.requests.length, bfl: bfl.requests.length };
    const report = await check();

    const g = of(report, 'google');
    expect(g).toMatchObject({ status: 'CHECKED', reason: null, error: null, upstreamModels: GOOGLE_LISTED_MODELS.length });
    expect(g.notServed.map((m) => m.slug)).not.toContain('google/imagen-4');
    expect(g.notServed.map((m) => m.slug)).not.toContain('google/gemini-3.1-flash-image');
    // Served by Google, sold by nobody here: a candidate for the catalog.
    expect(g.notInCatalog).toContain('veo-3.1-generate-preview');
    const [listCall] = google.requests.slice(from.google);
    expect(listCall).toMatchObject({ method: 'GET', path: '/v1beta/models' });
    expect(listCall!.headers['x-goog-api-key']).toBe('good-google-key');

    // Anthropic's list (the fake serves one model): every Claude of the catalog is reported, and the one it serves.
    const a = of(report, 'anthropic');
    expect(a).toMatchObject({ status: 'CHECKED', upstreamModels: 1, notInCatalog: ['claude-fake'] });
    expect(a.notServed).toContainEqual({
      slug: 'anthropic/claude-sonnet-4-6',
      upstreamModel: 'claude-sonnet-4-6',
      status: 'ACTIVE',
      availability: 'AVAILABLE',
    });
    const [anthropicCall] = anthropic.requests.slice(from.anthropic);
    expect(anthropicCall).toMatchObject({ method: 'GET', path: '/v1/models', apiKey: 'sk-ant-check-1' });
    expect(anthropicCall!.headers['anthropic-version']).toBe('2023-06-01');

    expect(of(report, 'elevenlabs')).toMatchObject({ status: 'CHECKED', notServed: [], upstreamModels: 4 });
    expect(elevenlabs.requests.slice(from.elevenlabs).map((r) => [r.method, r.path])).toEqual([['GET', '/v1/models']]);

    expect(of(report, 'bfl')).toMatchObject({
      status: 'NOT_CHECKABLE',
      reason: expect.stringContaining('no endpoint that lists its models'),
      notServed: [],
      notInCatalog: [],
    });
    expect(bfl.requests.slice(from.bfl)).toEqual([]);
    expect(of(report, 'mistral')).toMatchObject({ status: 'NOT_CONFIGURED', reason: expect.stringContaining('MISTRAL_API_KEY') });
    expect(report.providers.map((p) => p.provider)).not.toContain('local');
    expect(report.summary).toMatchObject({ checked: expect.any(Number), errors: 0 });
  });

  it('reports a catalog model whose provider no longer serves it, and changes nothing', async () => {
    // A catalog that still sells Imagen 4, as one an operator edited (the seed leaves such rows alone) would.
    const [row] = await t.platform.db.select().from(models).where(eq(models.slug, 'google/imagen-4'));
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/v1/admin/models/${row!.id}`,
      headers: bearer(superAdmin),
      payload: { availability: 'AVAILABLE' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const before = await modelRows();

    const report = await check();
    expect(of(report, 'google').notServed).toContainEqual({
      slug: 'google/imagen-4',
      upstreamModel: 'imagen-4.0-generate-001',
      status: 'ACTIVE',
      availability: 'AVAILABLE',
    });
    expect(needsAction(report)).toBe(true);
    const text = formatProviderCheck(report);
    expect(text).toContain('NOT SERVED  google/imagen-4 (upstream "imagen-4.0-generate-001", ACTIVE, AVAILABLE)');
    expect(text).toContain('Action needed');
    expect(await modelRows()).toEqual(before);
  });

  it('reports a provider that fails to answer as an ERROR with its message, without marking its account failing', async () => {
    const accountsBefore = await t.services.gateway.pool.accounts('openai');
    openai.decide((r) => (r.path === '/v1/models' ? { kind: 'error', status: 500, body: OPENAI_MEDIA_ERRORS[500] } : { kind: 'default' }));
    try {
      const report = await check();
      const o = of(report, 'openai');
      expect(o).toMatchObject({ status: 'ERROR', upstreamModels: null, notServed: [], error: { status: 500, code: 'server_error' } });
      expect(o.reason).toBe('The provider did not list its models for its account: The server had an error while processing your request. Sorry about that!');
      expect(report.summary.errors).toBe(1);
      expect(of(report, 'google').status).toBe('CHECKED');
      expect(formatProviderCheck(report)).toContain('openai: error:');
    } finally {
      openai.decide(() => ({ kind: 'default' }));
    }
    expect(await t.services.gateway.pool.accounts('openai')).toEqual(accountsBefore);
  });
});

describe('the seed on upgrade', () => {
  it('retires the Imagen 4 models an earlier seed sold, naming their replacements', async () => {
    await t.platform.db
      .update(models)
      .set({ availability: 'AVAILABLE', capabilityOverride: {}, seedManaged: true })
      .where(eq(models.slug, 'google/imagen-4-ultra'));
    await t.platform.db.delete(settings).where(eq(settings.key, 'seed.catalog'));
    await t.services.catalog.seed();
    const [row] = await t.platform.db.select().from(models).where(eq(models.slug, 'google/imagen-4-ultra'));
    expect(row).toMatchObject({ availability: 'RETIRED', capabilityOverride: { flags: { replacedBy: 'google/gemini-3-pro-image' } } });
    const entry = await t.services.catalog.getBySlug('google/imagen-4-ultra');
    expect(entry?.unavailableReason).toBe('The model was retired by its provider; use "google/gemini-3-pro-image" instead.');
  });
});
