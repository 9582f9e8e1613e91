import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { generations } from '../../db/schema/library.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const setDefaultVisibility = async (accessToken: string, visibility: 'PRIVATE' | 'UNLISTED' | 'PUBLIC') => {
  const response = await t.app.inject({
    method: 'PATCH',
    url: '/v1/account/preferences',
    headers: bearer(accessToken),
    payload: { defaultGenerationVisibility: visibility },
  });
  expect(response.statusCode).toBe(200);
};

const image = (userId: string, modelId: string | null = null, requestId: string | null = null) => ({
  userId,
  kind: 'IMAGE' as const,
  prompt: 'A fox in the snow',
  output: { images: [{ url: '/v1/files/raw/image/x.png', mimeType: 'image/png' }] },
  modelId,
  requestId,
});

describe('library.saveGeneration', () => {
  it('stores a private, untagged text item with the clock time', async () => {
    const { user } = await signUp(t.app);
    const model = await t.services.catalog.resolveForGateway('local/text');
    const saved = await t.services.library.saveGeneration({
      userId: user.id,
      kind: 'TEXT',
      prompt: 'A haiku',
      output: { text: 'Waves fold into foam' },
      modelId: model.id,
    });
    expect(saved).toMatchObject({
      userId: user.id,
      kind: 'TEXT',
      prompt: 'A haiku',
      output: { text: 'Waves fold into foam' },
      modelId: model.id,
      visibility: 'PRIVATE',
      tags: [],
      favorite: false,
      thumbnailUrl: null,
      requestId: null,
    });
    expect(saved.createdAt.toISOString()).toBe(t.clock.now().toISOString());
  });

  it('keeps one item per gateway request, however often it is saved', async () => {
    const { user } = await signUp(t.app);
    const input = { ...image(user.id, null, 'req-library-1'), tags: ['fox'] };
    const first = await t.services.library.saveGeneration(input);
    const again = await t.services.library.saveGeneration({ ...input, prompt: 'changed' });
    expect(again.id).toBe(first.id);
    expect(again.prompt).toBe('A fox in the snow');
    expect(await t.platform.db.$count(generations, eq(generations.requestId, 'req-library-1'))).toBe(1);
  });

  it('gives new media the owner’s default visibility and keeps text private', async () => {
    const { user, accessToken } = await signUp(t.app);
    expect((await t.services.library.saveGeneration(image(user.id))).visibility).toBe('PRIVATE');
    await setDefaultVisibility(accessToken, 'PUBLIC');
    for (const kind of ['IMAGE', 'VIDEO', 'AUDIO'] as const) {
      const saved = await t.services.library.saveGeneration({ ...image(user.id), kind });
      expect(saved.visibility).toBe('PUBLIC');
    }
    const text = await t.services.library.saveGeneration({ userId: user.id, kind: 'TEXT', prompt: 'hi', output: { text: 'hello' }, modelId: null });
    expect(text.visibility).toBe('PRIVATE');
    await setDefaultVisibility(accessToken, 'UNLISTED');
    expect((await t.services.library.saveGeneration({ ...image(user.id), kind: 'AUDIO' })).visibility).toBe('UNLISTED');
  });

  it('reads the preference inside the caller’s transaction (and rolls back with it)', async () => {
    const { user, accessToken } = await signUp(t.app);
    await setDefaultVisibility(accessToken, 'UNLISTED');
    const saved = await t.platform.db.transaction(async (tx) => t.services.library.saveGeneration(image(user.id, null, 'req-library-tx'), tx));
    expect(saved.visibility).toBe('UNLISTED');
    await t.platform.db
      .transaction(async (tx) => {
        await t.services.library.saveGeneration(image(user.id, null, 'req-library-rollback'), tx);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await t.platform.db.$count(generations, eq(generations.requestId, 'req-library-rollback'))).toBe(0);
  });

  it('normalises tags: trimmed, blanks dropped, repeats kept once', async () => {
    const { user } = await signUp(t.app);
    const saved = await t.services.library.saveGeneration({ ...image(user.id), tags: [' enhanced ', 'Fox', '', 'fox', 'snow'] });
    expect(saved.tags).toEqual(['enhanced', 'Fox', 'snow']);
  });

  it('changes visibility only of the owner’s item', async () => {
    const { user } = await signUp(t.app);
    const other = await signUp(t.app);
    const saved = await t.services.library.saveGeneration(image(user.id));
    await t.services.library.generations.setVisibility(other.user.id, saved.id, 'PUBLIC');
    expect((await t.services.library.generations.get(user.id, saved.id)).visibility).toBe('PRIVATE');
    await t.services.library.generations.setVisibility(user.id, saved.id, 'PUBLIC');
    expect((await t.services.library.generations.get(user.id, saved.id)).visibility).toBe('PUBLIC');
  });
});

describe('usage.record', () => {
  it('writes a usage record with whole, non-negative units', async () => {
    const { user } = await signUp(t.app);
    const row = await t.services.usage.record({
      userId: user.id,
      requestId: 'req-usage-1',
      operation: 'text.generate',
      status: 'PARTIAL',
      inputUnits: 12.6,
      outputUnits: -3,
      tokensConsumed: 40,
      latencyMs: 9.2,
      metadata: { note: 'x' },
    });
    expect(row).toMatchObject({
      userId: user.id,
      requestId: 'req-usage-1',
      operation: 'text.generate',
      status: 'PARTIAL',
      inputUnits: 13,
      outputUnits: 0,
      tokensConsumed: 40,
      latencyMs: 9,
      providerCostCents: 0,
      metadata: { note: 'x' },
      jobId: null,
      subscriptionId: null,
    });
  });
});

describe('the library in a data-free state', () => {
  it('lists nothing for a new user', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await t.app.inject({ url: '/v1/library/generations', headers: bearer(accessToken) });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ items: [], nextCursor: null });
  });
});
