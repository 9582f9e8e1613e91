import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';

let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => t?.close());

async function keyHolder(scopes: string[]) {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, scopes);
  return { userId: user.id as string, openai: new OpenAI({ apiKey: key, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 }) };
}
const usageOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));

describe('/openai/v1 images and speech with the official openai SDK', () => {
  it('generates images as URLs and as base64, each call metered once', async () => {
    const { openai, userId } = await keyHolder(['ai:image']);
    const before = await walletState(t, userId);
    const { data: byUrl, response } = await openai.images
      .generate({ model: 'local/image', prompt: 'a lighthouse at dusk', n: 2, size: '256x256' })
      .withResponse();
    expect(byUrl.data).toHaveLength(2);
    expect(byUrl.data![0]!.url).toMatch(/^https?:\/\//);
    const charged = (byUrl as unknown as { usage: { tokens_charged: number } }).usage.tokens_charged;
    const requestId = response.headers.get('x-ai-request-id')!;
    const [record] = await usageOf(requestId);
    expect(record).toMatchObject({ userId, operation: 'image.generate', status: 'SUCCESS', tokensConsumed: charged });

    const b64 = await openai.images.generate({ model: 'local/image', prompt: 'a lighthouse at dawn', response_format: 'b64_json' });
    const png = Buffer.from(b64.data![0]!.b64_json!, 'base64');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    const b64Charged = (b64 as unknown as { usage: { tokens_charged: number } }).usage.tokens_charged;
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - charged - b64Charged);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('speaks text as WAV bytes, metered once; errors in OpenAI shape', async () => {
    const { openai, userId } = await keyHolder(['ai:audio']);
    const { data, response } = await openai.audio.speech
      .create({ model: 'local/speech', input: 'Hello from the lighthouse.', voice: 'neutral' })
      .withResponse();
    expect(response.headers.get('content-type')).toContain('audio/wav');
    const bytes = Buffer.from(await data.arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe('RIFF');
    const [record] = await usageOf(response.headers.get('x-ai-request-id')!);
    expect(record).toMatchObject({ userId, operation: 'audio.speech', status: 'SUCCESS', tokensConsumed: Number(response.headers.get('x-ai-tokens-charged')) });

    const wrongVoice = await openai.audio.speech.create({ model: 'local/speech', input: 'Hi', voice: 'alloy' }).catch((err: unknown) => err);
    expect(wrongVoice).toBeInstanceOf(OpenAI.BadRequestError);
    expect(wrongVoice).toMatchObject({ status: 400, param: 'voice' });

    await setBalance(t, userId, 0);
    const broke = await openai.audio.speech.create({ model: 'local/speech', input: 'Hi', voice: 'neutral' }).catch((err: unknown) => err);
    expect(broke).toBeInstanceOf(OpenAI.RateLimitError);
    expect(broke).toMatchObject({ code: 'insufficient_quota' });
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('needs the matching scope', async () => {
    const { openai } = await keyHolder(['ai:text']);
    const denied = await openai.images.generate({ model: 'local/image', prompt: 'x' }).catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
  });
});
