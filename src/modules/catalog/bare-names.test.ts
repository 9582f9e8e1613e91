import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { models } from '../../db/schema/catalog.js';
import { createTestApp, type TestApp } from '../../../test/helpers/test-app.js';

/**
 * A vendor's own model id (`gpt-5`) names our `openai/gpt-5`, when one provider serves that name. No provider has a
 * key here, so a resolved model is refused as unavailable, naming its provider: that is how the tests see which it is.
 */
const servedBy = (provider: string) => ({ statusCode: 503, code: 'MODEL_UNAVAILABLE', message: expect.stringContaining(`The ${provider} provider`) });
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

describe('model ids without the provider', () => {
  it('resolve to the one model of that name, the full slug first', async () => {
    await expect(t.services.catalog.resolveForGateway('gpt-5')).rejects.toMatchObject(servedBy('OpenAI'));
    await expect(t.services.catalog.resolveForGateway('claude-sonnet-4-6')).rejects.toMatchObject(servedBy('Anthropic'));
    expect((await t.services.catalog.resolveForGateway('text')).slug).toBe('local/text');
    expect((await t.services.catalog.resolveForGateway('local/text')).slug).toBe('local/text');
    await expect(t.services.catalog.resolveForGateway('no-such-model')).rejects.toMatchObject({
      statusCode: 404,
      message: expect.stringContaining('GET /v1/models'),
    });
  });

  it('are refused, naming the way out, when two providers serve the name', async () => {
    await t.platform.db.update(models).set({ slug: 'xai/gpt-5' }).where(eq(models.slug, 'xai/grok-4'));
    t.services.catalog.invalidate();
    await expect(t.services.catalog.resolveForGateway('gpt-5')).rejects.toMatchObject({ statusCode: 404, message: expect.stringContaining('"openai/gpt-5"') });
    await expect(t.services.catalog.resolveForGateway('xai/gpt-5')).rejects.toMatchObject(servedBy('xAI'));
  });
});
