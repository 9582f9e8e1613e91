import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { usageRecords } from '../../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { ledgerOf, providerEnv, setBalance, walletState } from '../../../../test/helpers/gateway.js';
import { solidPng, startFakeOpenAiMedia, type MediaFake } from '../../../../test/helpers/fake-media-upstreams.js';

/*
 * GPT Image billed by the tokens OpenAI reports. Every figure is worked out here from OpenAI's published prices
 * (https://platform.openai.com/docs/pricing: text input $5, image input $10, image output $40 per 1M tokens) and its
 * output table (https://platform.openai.com/docs/guides/image-generation: low 272 / medium 1056 / high 4160 tokens at
 * 1024x1024, high 6208 at 1536x1024), at the default token value (122 BDT a dollar, 18 BDT per 1M tokens).
 */
const TEXT_IN = 500; // US cents per 1M tokens
const IMAGE_IN = 1000;
const IMAGE_OUT = 4000;
/** Wallet tokens for a usage: provider cents = sum(tokens x cents per 1M) / 1M; tokens = ceil(cents x 122 x 1M / 1800). */
const walletTokens = (text: number, imageIn: number, out: number) => Math.ceil(((text * TEXT_IN + imageIn * IMAGE_IN + out * IMAGE_OUT) * 122) / 1800);
/** The fake counts a prompt at a token per 4 bytes; the reservation bounds it at a token per byte plus 64 of framing. */
const fakeTextTokens = (prompt: string) => Math.ceil(Buffer.byteLength(prompt) / 4);
const promptBound = (prompt: string) => Buffer.byteLength(prompt) + 64;

let t: TestApp;
let fake: MediaFake & { downloads: () => number };
beforeAll(async () => {
  fake = await startFakeOpenAiMedia();
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-test-1']), startJobs: true });
});
afterEach(() => fake.decide(() => ({ kind: 'default' })));
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function richUser() {
  const { accessToken, user } = await signUp(t.app);
  await setBalance(t, user.id, 50_000_000);
  return { token: accessToken as string, userId: user.id as string };
}
const image = (token: string, payload: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/image', headers: bearer(token), payload: { model: 'openai/gpt-image-1', ...payload } });
const usageRecord = async (requestId: string) => (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId)))[0]!;
const lastImageCall = () => fake.requests.filter((r) => r.path.startsWith('/v1/images')).at(-1)!;

describe('GPT Image: charged from the usage OpenAI reports', () => {
  it('low: reserves the low price and charges the reported tokens; the answer and the usage record say what was used', async () => {
    const { token, userId } = await richUser();
    const prompt = 'a paper boat on a pond';
    const before = await walletState(t, userId);
    const response = await image(token, { prompt, quality: 'low', count: 2, width: 1024, height: 1024 });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(lastImageCall().body).toMatchObject({ model: 'gpt-image-1', quality: 'low', size: '1024x1024', n: 2 });
    const text = fakeTextTokens(prompt);
    const charged = walletTokens(text, 0, 2 * 272);
    const reserved = walletTokens(promptBound(prompt), 0, 2 * 272);
    expect(body.usage).toEqual({
      imagesGenerated: 2,
      imagesRequested: 2,
      creditsConsumed: charged,
      quality: 'low',
      size: '1024x1024',
      inputTokens: text,
      inputTokensDetails: { textTokens: text, imageTokens: 0 },
      outputTokens: 544,
      totalTokens: text + 544,
    });
    expect((await ledgerOf(t, body.requestId)).map((r) => [r.kind, r.amount])).toEqual([
      ['USAGE', -reserved],
      ['REFUND', reserved - charged],
    ]);
    expect((await walletState(t, userId)).balance).toBe(before.balance - charged);
    const record = await usageRecord(body.requestId);
    expect(record).toMatchObject({ status: 'SUCCESS', tokensConsumed: charged, inputUnits: 2, outputUnits: 2 });
    expect(record.metadata).toMatchObject({
      requestedQuality: 'low',
      quality: 'low',
      size: '1024x1024',
      inputTokens: text,
      textInputTokens: text,
      imageInputTokens: 0,
      outputTokens: 544,
      tokenSource: 'provider',
      reservedTokens: reserved,
    });
  });

  it('high at 1536x1024: charged the high landscape tokens', async () => {
    const { token } = await richUser();
    const prompt = 'a detailed map of an imaginary island';
    const body = json(await image(token, { prompt, quality: 'high', width: 1920, height: 1080 }));
    expect(body.usage).toMatchObject({ quality: 'high', size: '1536x1024', outputTokens: 6208 });
    expect(body.usage.creditsConsumed).toBe(walletTokens(fakeTextTokens(prompt), 0, 6208));
    expect((await ledgerOf(t, body.requestId))[0]!.amount).toBe(-walletTokens(promptBound(prompt), 0, 6208));
  });

  it('auto (the default): reserves the high price, charges the quality OpenAI chose (medium here) and refunds the rest', async () => {
    const { token } = await richUser();
    const prompt = 'a lantern in the fog';
    const body = json(await image(token, { prompt }));
    expect(lastImageCall().body).toMatchObject({ quality: 'auto', size: '1024x1024' });
    const charged = walletTokens(fakeTextTokens(prompt), 0, 1056);
    const reserved = walletTokens(promptBound(prompt), 0, 4160);
    expect(body.usage).toMatchObject({ quality: 'medium', size: '1024x1024', outputTokens: 1056, creditsConsumed: charged });
    expect((await ledgerOf(t, body.requestId)).map((r) => r.amount)).toEqual([-reserved, reserved - charged]);
    expect((await usageRecord(body.requestId)).metadata).toMatchObject({ requestedQuality: 'auto', quality: 'medium' });
  });

  it('an edit pays the source image at the image input price', async () => {
    const { token } = await richUser();
    const prompt = 'make it night';
    const source = `data:image/png;base64,${solidPng(64, 64, 200).toString('base64')}`;
    const body = json(await image(token, { prompt, quality: 'low', initImageUrl: source }));
    expect(lastImageCall().path).toBe('/v1/images/edits');
    // A 64x64 source is one 512px tile: 65 + 129 = 194 image tokens.
    const text = fakeTextTokens(prompt);
    expect(body.usage).toMatchObject({ inputTokens: text + 194, inputTokensDetails: { textTokens: text, imageTokens: 194 }, outputTokens: 272 });
    expect(body.usage.creditsConsumed).toBe(walletTokens(text, 194, 272));
    // Reserved with the most a source image can cost (4 tiles: 65 + 4 x 129 = 581).
    expect((await ledgerOf(t, body.requestId))[0]!.amount).toBe(-walletTokens(promptBound(prompt), 581, 272));
  });

  it('an answer without usage is charged the table price of the quality and size it reports, never more than reserved', async () => {
    const { token } = await richUser();
    const prompt = 'a quiet street';
    fake.decide((request) =>
      request.path === '/v1/images/generations'
        ? {
            kind: 'error',
            status: 200,
            body: { created: 1, data: [{ b64_json: solidPng(16, 16).toString('base64') }], quality: 'medium', size: '1024x1024', output_format: 'png' },
          }
        : { kind: 'default' },
    );
    const body = json(await image(token, { prompt, quality: 'auto' }));
    // Medium's 1056 output tokens, the prompt counted as reserved.
    expect(body.usage.creditsConsumed).toBe(walletTokens(promptBound(prompt), 0, 1056));
    expect((await usageRecord(body.requestId)).metadata).toMatchObject({ quality: 'medium', outputTokens: 1056, tokenSource: 'table' });
  });

  it('refuses a quality GPT Image does not take, before anything is reserved', async () => {
    const { token, userId } = await richUser();
    const before = await walletState(t, userId);
    const calls = fake.requests.length;
    const response = await image(token, { prompt: 'x', quality: 'hd' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.details).toEqual([{ field: 'quality', message: 'must be one of "low", "medium", "high", "auto"' }]);
    expect(await walletState(t, userId)).toEqual(before);
    expect(fake.requests.length).toBe(calls);
  });
});

describe('models priced per image keep their prices', () => {
  const cents = (c: number) => Math.ceil((c * 122 * 1_000_000) / 1800);

  it('DALL-E 3: pinned to standard, its only priced quality; auto is taken, hd refused', async () => {
    const { token } = await richUser();
    const body = json(await image(token, { model: 'openai/dall-e-3', prompt: 'a fox' }));
    expect(lastImageCall().body).toMatchObject({ model: 'dall-e-3', quality: 'standard' });
    expect(body.usage).toEqual({ imagesGenerated: 1, imagesRequested: 1, creditsConsumed: cents(4) });
    expect(json(await image(token, { model: 'openai/dall-e-3', prompt: 'a fox', quality: 'auto' })).usage.creditsConsumed).toBe(cents(4));
    const hd = await image(token, { model: 'openai/dall-e-3', prompt: 'a fox', quality: 'hd' });
    expect(hd.statusCode).toBe(400);
    expect(json(hd).error.message).toContain('quality must be one of "standard"');
  });

  it('a model without a quality setting: auto is taken, any other quality is a 400 naming it', async () => {
    const { token } = await richUser();
    const ok = json(await image(token, { model: 'local/image', prompt: 'a fox', quality: 'auto', width: 64, height: 64 }));
    expect(ok.usage).toEqual({ imagesGenerated: 1, imagesRequested: 1, creditsConsumed: cents(1) });
    const refused = await image(token, { model: 'local/image', prompt: 'a fox', quality: 'high' });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error).toMatchObject({ code: 'BAD_REQUEST', details: [{ field: 'quality', message: 'not supported by this model' }] });
    expect(json(refused).error.message).toContain('has no quality setting');
  });
});

describe('OpenAI-shaped surface and async jobs', () => {
  it("POST /openai/v1/images/generations takes quality and answers OpenAI's quality, size, output_format and usage", async () => {
    const { token } = await richUser();
    const prompt = 'a kite';
    const response = await t.app.inject({
      method: 'POST',
      url: '/openai/v1/images/generations',
      headers: bearer(token),
      payload: { model: 'openai/gpt-image-1', prompt, quality: 'high', size: '1024x1024' },
    });
    expect(response.statusCode, response.body).toBe(200);
    const text = fakeTextTokens(prompt);
    expect(json(response)).toMatchObject({
      quality: 'high',
      size: '1024x1024',
      output_format: 'png',
      usage: {
        tokens_charged: walletTokens(text, 0, 4160),
        input_tokens: text,
        input_tokens_details: { text_tokens: text, image_tokens: 0 },
        output_tokens: 4160,
        total_tokens: text + 4160,
      },
    });
    const bad = await t.app.inject({
      method: 'POST',
      url: '/openai/v1/images/generations',
      headers: bearer(token),
      payload: { model: 'openai/gpt-image-1', prompt, quality: 'standard' },
    });
    expect(bad.statusCode).toBe(400);
    expect(json(bad).error).toMatchObject({ type: 'invalid_request_error', param: 'quality' });
  });

  it('a queued job reserves the price fixed at submit and settles from the usage its run reports', async () => {
    const { token, userId } = await richUser();
    const prompt = 'a windmill at noon';
    const before = await walletState(t, userId);
    const submitted = await image(token, { prompt, quality: 'low', count: 3, async: true });
    expect(submitted.statusCode, submitted.body).toBe(200);
    const { jobId } = json(submitted);
    let job: any;
    for (const started = Date.now(); Date.now() - started < 30_000; await new Promise((r) => setTimeout(r, 200))) {
      job = json(await t.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(token) }));
      if (job.status === 'SUCCEEDED' || job.status === 'FAILED') break;
    }
    expect(job.status).toBe('SUCCEEDED');
    const text = fakeTextTokens(prompt);
    const charged = walletTokens(text, 0, 3 * 272);
    expect(job.creditsReserved).toBe(walletTokens(promptBound(prompt), 0, 3 * 272));
    expect(job.creditsConsumed).toBe(charged);
    expect(job.output.usage).toMatchObject({ imagesGenerated: 3, creditsConsumed: charged, quality: 'low', size: '1024x1024', outputTokens: 816 });
    expect((await walletState(t, userId)).balance).toBe(before.balance - charged);
  });
});
