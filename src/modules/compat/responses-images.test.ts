import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { files } from '../../db/schema/files.js';
import { storedResponses } from '../../db/schema/responses.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { encodePng } from '../../platform/media/png.js';
import { startFakeOpenAi, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { bearer, createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';

/** Images of stored responses: kept as files of the caller, not as base64 in the row, and sent again on continuation. */

let fake: FakeUpstream;
let t: TestApp;
let baseURL: string;

beforeAll(async () => {
  fake = await startFakeOpenAi(() => ({ kind: 'ok', text: 'A grey square.' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-responses-images-0001']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/openai/v1`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const MODEL = 'openai/gpt-4o-mini';
const pngBytes = encodePng(
  64,
  48,
  new Uint8Array(64 * 48 * 3).map((_, i) => (i * 37) % 251),
);
const png = `data:image/png;base64,${pngBytes.toString('base64')}`;
const base64 = pngBytes.toString('base64');

async function caller() {
  const account = await signUp(t.app);
  await setPlan(t, account.user.id, 'starter');
  const { key } = await createApiKey(t, account.accessToken, ['ai:text']);
  return { ...account, userId: account.user.id as string, openai: new OpenAI({ apiKey: key, baseURL, maxRetries: 0 }) };
}
const withImage = (text: string): OpenAI.Responses.ResponseInput => [
  {
    role: 'user',
    content: [
      { type: 'input_text', text },
      { type: 'input_image', image_url: png, detail: 'low' },
      { type: 'input_image', image_url: png, detail: 'high' },
    ],
  },
];
const rowOf = async (id: string) => (await t.platform.db.select().from(storedResponses).where(eq(storedResponses.id, id)))[0];
const filesOf = (userId: string) => t.platform.db.select().from(files).where(eq(files.ownerId, userId));
/** The images the provider was sent in the last call, in order. */
const sentImages = () =>
  (fake.calls().at(-1)!.body.messages as { content: string | { type: string; image_url?: { url: string } }[] }[]).flatMap((m) =>
    typeof m.content === 'string' ? [] : m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url),
  );

describe('a stored response with an inline image', () => {
  it('keeps the image as one file of the caller, no base64 in its row, and a continuation sends it again', async () => {
    const { openai, userId } = await caller();
    const first = await openai.responses.create({ model: MODEL, input: withImage('What is this?') });
    const row = await rowOf(first.id);
    const kept = JSON.stringify(row!.inputItems);
    expect(kept).not.toContain(base64.slice(0, 64));
    expect(kept).not.toContain('data:');
    expect(Buffer.byteLength(kept)).toBeLessThan(1024);
    const [file, ...others] = await filesOf(userId);
    expect(others).toEqual([]); // the same image twice is one file
    expect(file).toMatchObject({ kind: 'IMAGE', status: 'READY', size: pngBytes.length, contentType: 'image/png' });
    expect(await t.services.files.storageMbUsed(userId)).toBeGreaterThan(0);

    const items = await openai.responses.inputItems.list(first.id);
    const parts = (items.data[0] as { content: { type: string; image_url?: string; file_id?: string; detail?: string }[] }).content;
    expect(parts.slice(1)).toEqual([
      { type: 'input_image', image_url: expect.stringContaining(`/v1/files/raw/${file!.key}`), file_id: file!.id, detail: 'low' },
      { type: 'input_image', image_url: expect.stringContaining(`/v1/files/raw/${file!.key}`), file_id: file!.id, detail: 'high' },
    ]);

    await openai.responses.create({ model: MODEL, previous_response_id: first.id, input: 'And its colour?' });
    expect(sentImages()).toEqual([png, png]);
  });

  it('is kept once when its Idempotency-Key is replayed', async () => {
    const { openai, userId } = await caller();
    const body = { model: MODEL, input: withImage('Once') };
    const first = await openai.responses.create(body, { headers: { 'Idempotency-Key': 'image-once' } });
    const replay = await openai.responses.create(body, { headers: { 'Idempotency-Key': 'image-once' } });
    expect(replay).toEqual(first);
    expect(await filesOf(userId)).toHaveLength(1);
  });

  it('goes with its response: deleted, expired and purged, or with the account', async () => {
    const { openai, userId, accessToken, password } = await caller();
    const deleted = await openai.responses.create({ model: MODEL, input: withImage('Delete me') });
    await openai.responses.delete(deleted.id);
    expect(await filesOf(userId)).toEqual([]);

    const expiring = await openai.responses.create({ model: MODEL, input: withImage('Expire me') });
    t.clock.advance(30 * DAY_MS + 1);
    try {
      const [purge] = t.services.responses.jobs();
      await purge!.handler({}, { id: 'test', retryCount: 0 });
    } finally {
      t.clock.advance(-(30 * DAY_MS + 1));
    }
    expect(await rowOf(expiring.id)).toBeUndefined();
    expect(await filesOf(userId)).toEqual([]);

    await openai.responses.create({ model: MODEL, input: withImage('Keep me') });
    expect(await filesOf(userId)).toHaveLength(1);
    expect((await t.app.inject({ method: 'POST', url: '/v1/account/delete', headers: bearer(accessToken), payload: { password } })).statusCode).toBe(200);
    expect(await filesOf(userId)).toEqual([]);
  });

  it('whose file is gone cannot be continued: a clear 400, nothing charged', async () => {
    const { openai, userId } = await caller();
    const first = await openai.responses.create({ model: MODEL, input: withImage('Lose me') });
    const [file] = await filesOf(userId);
    await t.services.files.removeFiles([file!.id]);
    const before = await walletState(t, userId);
    const calls = fake.calls().length;
    await expect(openai.responses.create({ model: MODEL, previous_response_id: first.id, input: 'Go on' })).rejects.toMatchObject({
      status: 400,
      code: 'previous_response_image_not_found',
      param: 'previous_response_id',
      message: expect.stringContaining('whose stored copy is gone. Send the conversation, with its images, as input instead.'),
    });
    expect(await walletState(t, userId)).toEqual(before);
    expect(fake.calls().length).toBe(calls);
    expect(await rowOf(first.id)).toBeDefined(); // the response itself is still there to retrieve
  });
});
