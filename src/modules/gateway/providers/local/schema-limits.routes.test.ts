import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { models } from '../../../../db/schema/catalog.js';
import { usageRecords } from '../../../../db/schema/usage.js';
import { createApiKey, setPlan } from '../../../../../test/helpers/gateway.js';
import { createTestApp, signUp, type TestApp } from '../../../../../test/helpers/test-app.js';
import { expectUnchargedOpenAiRefusal } from '../../../../../test/helpers/uncharged-refusal.js';
import { LOCAL_SCHEMA_LIMITS } from './schema-limits.js';

// The schemas that once froze the event loop, sent to the built-in model through the real app: each refused before
// anything is reserved (or, for a backtracking pattern, answered without backtracking), while /healthz keeps answering.

let t: TestApp;
let origin: string;
let openai: OpenAI;
let userId: string;

beforeAll(async () => {
  t = await createTestApp();
  const [row] = await t.platform.db.select().from(models).where(eq(models.slug, 'local/text'));
  const features = [...new Set([...row!.features, 'TOOLS'] as const)];
  await t.platform.db.update(models).set({ features }).where(eq(models.slug, 'local/text'));
  t.services.catalog.invalidate();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  openai = new OpenAI({ apiKey: key, baseURL: `${origin}/openai/v1`, maxRetries: 0 });
  // The first calls of a process pay for loading code; the probes below measure the event loop, not that.
  await probeHealth();
  await openai.chat.completions.create({
    model: 'local/text',
    messages: [{ role: 'user', content: 'warm up' }],
    response_format: jsonSchema({ type: 'object' }),
  });
});
afterAll(async () => t?.close());

const jsonSchema = (schema: Record<string, unknown>) => ({ type: 'json_schema' as const, json_schema: { name: 'answer', schema } });
const ask = (content: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>) =>
  openai.chat.completions.create({ model: 'local/text', messages: [{ role: 'user', content }], ...extra });

async function probeHealth(): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${origin}/healthz`);
  await response.text();
  expect(response.status).toBe(200);
  return performance.now() - started;
}

/** Runs the call while probing /healthz, at least once and until the call settles: the slowest probe and the outcome. */
async function probedWhile<T>(call: () => Promise<T>) {
  let settled = false;
  const outcome = call().then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  void outcome.then(() => (settled = true));
  const probes: number[] = [];
  do probes.push(await probeHealth());
  while (!settled);
  return { slowest: Math.max(...probes), outcome: await outcome };
}

/**
 * The call, during which /healthz answered within 100 ms. The probes are wall-clock, and on a loaded machine one can be
 * late by chance, so the call may be made up to three times; a frozen event loop would make every attempt late.
 */
async function withHealthProbes<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { slowest, outcome } = await probedWhile(call);
    if (slowest >= 100 && attempt < 3) continue;
    expect(slowest).toBeLessThan(100);
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }
}

const refusedUncharged = (run: () => Promise<unknown>, param: string) =>
  expectUnchargedOpenAiRefusal(
    t,
    userId,
    () => 0,
    () => withHealthProbes(run),
    param,
  );

const { minLength, minItems, depth } = LOCAL_SCHEMA_LIMITS;

describe('local/text refuses a schema past its limits before reserving, and /healthz keeps answering', () => {
  it('a string of minLength 40,000 in response_format', async () => {
    const schema = { type: 'object', properties: { essay: { type: 'string', minLength: 40_000 } }, required: ['essay'] };
    const err = await refusedUncharged(() => ask('Write an essay', { response_format: jsonSchema(schema) }), 'responseFormat');
    expect(err.message).toContain(
      `asks for a string of at least 40000 characters at /essay; the built-in model writes at most ${minLength} per string: lower minLength`,
    );
  });

  it('an array of minItems 1,000,000 in a tool’s parameters', async () => {
    const tool = {
      type: 'function' as const,
      function: {
        name: 'list_ids',
        parameters: { type: 'object', properties: { ids: { type: 'array', items: { type: 'integer' }, minItems: 1_000_000 } }, required: ['ids'] },
      },
    };
    const err = await refusedUncharged(() => ask('List the ids', { tools: [tool] }), 'tools');
    expect(err.message).toContain(
      `The schema of the tool "list_ids" asks for an array of at least 1000000 items at /ids; the built-in model writes at most ${minItems} items per array`,
    );
  });

  it('required properties that refer back to the root, streamed or not', async () => {
    const schema = { type: 'object', properties: { left: { $ref: '#' }, right: { $ref: '#' } }, required: ['left', 'right'] };
    const err = await refusedUncharged(() => ask('Grow a tree', { response_format: jsonSchema(schema) }), 'responseFormat');
    expect(err.message).toContain(`nests deeper than ${depth} levels at /left/left/left/left/left/left/left/left/left/left/left/left/left`);
    await refusedUncharged(
      () =>
        openai.chat.completions.create({
          model: 'local/text',
          messages: [{ role: 'user', content: 'Grow a tree' }],
          response_format: jsonSchema(schema),
          stream: true,
        }),
      'responseFormat',
    );
  });
});

describe('local/text meets a backtracking pattern without backtracking', () => {
  it.each([
    ['^(a+)+$', 'a'.repeat(48)],
    ['^(a+)+!$', 'a!'],
  ])('%s against a prompt of many a’s and a "!": answered and charged as usual', async (pattern, expected) => {
    const schema = { type: 'object', properties: { word: { type: 'string', pattern } }, required: ['word'], additionalProperties: false };
    const completion = await withHealthProbes(() => ask(`${'a'.repeat(48)}!`, { response_format: jsonSchema(schema) }));
    expect(JSON.parse(completion.choices[0]!.message.content!)).toEqual({ word: expected });
    const charged = (completion.usage as unknown as { tokens_charged: number }).tokens_charged;
    expect(charged).toBeGreaterThan(0);
    const [record] = await t.platform.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.requestId, completion.id.replace('chatcmpl-', '')));
    expect(record).toMatchObject({ status: 'SUCCESS', tokensConsumed: charged });
  });
});
