import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { usageRecords } from '../../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { walletState } from '../../../../test/helpers/gateway.js';

// Size limits checked before texts are tokenized (text/token-bounds.ts): a refusal leaves the wallet and the usage alone.

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const post = (token: string, url: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url, headers: bearer(token), payload });
const embed = (token: string, payload: Record<string, unknown>) => post(token, '/v1/ai/embeddings', payload);
const usageOf = (userId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));

describe('embeddings size limits', () => {
  it('refuses a body over the token cap by its characters alone, before the model, the plan or the tokenizer', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    // 2,048 texts of 150 words: at least 307,200 tokens, whatever the words.
    const input = Array.from({ length: 2048 }, () => 'a '.repeat(150).trim());
    for (const model of ['local/embed', 'local/text', 'no/such-model']) {
      const refused = await embed(accessToken, { model, input });
      expect(refused.statusCode, model).toBe(400);
      expect(json(refused).error).toMatchObject({
        message: 'The input is at least 307200 tokens in all; send at most 300000 per call.',
        details: [{ field: 'input' }],
      });
    }
    expect(await walletState(t, user.id)).toEqual(before);
    expect(await usageOf(user.id)).toEqual([]);
  });

  it('stops tokenizing once a text passes the context or the texts pass the cap', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    // Digits are three to a token: one word of 30,000 digits is 10,000 tokens, far above its lowest count.
    const long = await embed(accessToken, { model: 'local/embed', input: ['short', '7'.repeat(30_000)] });
    expect(long.statusCode).toBe(400);
    expect(json(long).error).toMatchObject({
      message: 'input[1] is more than 8192 tokens; the model "local/embed" reads at most 8192 per text. Split it.',
      details: [{ field: 'input.1' }],
    });
    const many = await embed(accessToken, { model: 'local/embed', input: Array.from({ length: 2048 }, () => '7'.repeat(450)) });
    expect(many.statusCode).toBe(400);
    expect(json(many).error.message).toBe('The input is more than 300000 tokens in all; send at most 300000 per call.');
    expect(await walletState(t, user.id)).toEqual(before);
    expect(await usageOf(user.id)).toEqual([]);
  });
});

describe('text size limits', () => {
  it('refuses messages whose characters prove them longer than the context, before counting them', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    // 9,000 words in the system text: at least 9,000 tokens, and local/text reads 8,192.
    const refused = await post(accessToken, '/v1/ai/text', {
      model: 'local/text',
      messages: [
        { role: 'system', content: 'a '.repeat(9000) },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error).toMatchObject({
      message: expect.stringMatching(/^The messages are at least 90\d\d tokens; the model "local\/text" reads at most 8192\. Shorten them\.$/),
      details: [{ field: 'messages' }],
    });
    expect(await walletState(t, user.id)).toEqual(before);
    expect(await usageOf(user.id)).toEqual([]);
  });
});
