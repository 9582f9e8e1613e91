import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type Dialect } from '../../../../test/helpers/fakes/openai-compatible.js';
import { ACCEPT_ANY, startFakeOpenAi, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { collect, messages, textOf } from '../../../../test/helpers/text-streams.js';
import { rejection } from '../../../../test/helpers/rejection.js';
import { VENDOR_TEXT_MODELS } from '../../catalog/seed-vendors.js';
import { checkCapabilities, hintsLeftOut } from '../text/capabilities.js';
import type { TextOptions } from '../text/types.js';
import { createOpenAiAdapter } from './openai-compatible/adapter.js';
import { pluginOf, profileOf, PROVIDERS } from './index.js';
import { familiesOf, OPENAI_COMPATIBLE, parametersFor, type ProviderProfile } from './openai-compatible/profile.js';
import { TEXT_PARAMETERS, UpstreamError, type ProviderAdapter, type TextParameter, type TextRequest, type UpstreamCredential } from './types.js';

// Each OpenAI-compatible provider's profile against a fake that refuses what that provider's API refuses: the gateway's
// own policy (text/capabilities.ts) decides per parameter, and what it lets through must pass the strict fake, streamed
// and not. Through the app, see profiles.routes.test.ts.

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const schema = { type: 'json_schema' as const, name: 'answer', schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };

/** Every optional parameter the gateway accepts, set. */
const every = (profile: ProviderProfile): TextOptions => ({
  tools: [weather],
  toolChoice: 'auto',
  parallelToolCalls: false,
  responseFormat: profile.jsonSchema ? schema : { type: 'json_object' },
  topP: 0.9,
  topK: 40,
  stop: ['END'],
  seed: 7,
  presencePenalty: 0.1,
  frequencyPenalty: 0.2,
  user: 'user-42',
});

const WIRE: Record<TextParameter, string> = {
  tools: 'tools',
  toolChoice: 'tool_choice',
  parallelToolCalls: 'parallel_tool_calls',
  responseFormat: 'response_format',
  topP: 'top_p',
  topK: 'top_k',
  stop: 'stop',
  seed: 'seed',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
  user: 'user',
};

interface Case {
  dialect: Dialect;
  provider: string;
  model: string;
  /** Refused with a 400 before anything is reserved. */
  refused: TextParameter[];
  /** Sampling hints left out and named. */
  leftOut: TextParameter[];
  renamed?: Record<string, string>;
  temperature?: false;
}

const PENALTIES: TextParameter[] = ['presencePenalty', 'frequencyPenalty'];
const CASES: Case[] = [
  { dialect: 'openai', provider: 'openai', model: 'gpt-4o-mini', refused: [], leftOut: ['topK'] },
  { dialect: 'openai', provider: 'openai', model: 'gpt-5', refused: ['stop', ...PENALTIES], leftOut: ['topP', 'topK'], temperature: false },
  { dialect: 'openai', provider: 'openai', model: 'gpt-5-chat-latest', refused: [], leftOut: ['topK'] },
  {
    dialect: 'openai',
    provider: 'openai',
    model: 'o4-mini',
    refused: ['parallelToolCalls', 'stop', ...PENALTIES],
    leftOut: ['topP', 'topK'],
    temperature: false,
  },
  { dialect: 'google', provider: 'google', model: 'gemini-2.5-flash', refused: ['parallelToolCalls', 'seed', ...PENALTIES], leftOut: ['topK', 'user'] },
  { dialect: 'openrouter', provider: 'openrouter', model: 'meta-llama/llama-3.3-70b-instruct', refused: [], leftOut: [] },
  { dialect: 'groq', provider: 'groq', model: 'llama-3.3-70b-versatile', refused: PENALTIES, leftOut: ['topK'] },
  { dialect: 'mistral', provider: 'mistral', model: 'mistral-small-latest', refused: [], leftOut: ['topK', 'user'], renamed: { seed: 'random_seed' } },
  { dialect: 'deepseek', provider: 'deepseek', model: 'deepseek-chat', refused: ['parallelToolCalls', 'seed'], leftOut: ['topK', 'user'] },
  { dialect: 'deepseek', provider: 'deepseek', model: 'deepseek-reasoner', refused: ['parallelToolCalls', 'seed', ...PENALTIES], leftOut: ['topK', 'user'] },
  { dialect: 'xai', provider: 'xai', model: 'grok-3', refused: [], leftOut: ['topK'] },
  { dialect: 'xai', provider: 'xai', model: 'grok-4-0709', refused: [...PENALTIES, 'stop'], leftOut: ['topK'] },
  { dialect: 'xai', provider: 'xai', model: 'grok-3-mini', refused: [...PENALTIES, 'stop'], leftOut: ['topK'] },
  { dialect: 'xai', provider: 'xai', model: 'grok-4-fast-non-reasoning', refused: PENALTIES, leftOut: ['topK'] },
  { dialect: 'together', provider: 'together', model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', refused: ['parallelToolCalls'], leftOut: ['user'] },
  {
    dialect: 'fireworks',
    provider: 'fireworks',
    model: 'accounts/fireworks/models/llama-v3p3-70b-instruct',
    refused: ['parallelToolCalls', 'seed'],
    leftOut: [],
  },
  { dialect: 'perplexity', provider: 'perplexity', model: 'sonar-pro', refused: ['seed'], leftOut: ['user'] },
  { dialect: 'ollama', provider: 'ollama', model: 'llama3.2', refused: ['toolChoice', 'parallelToolCalls'], leftOut: ['topK', 'user'] },
  { dialect: 'vllm', provider: 'vllm', model: 'Qwen/Qwen3-8B', refused: [], leftOut: [] },
  // A server known only by its <PREFIX>_BASE_URL keeps OpenAI's field set.
  { dialect: 'vllm', provider: 'my-llm', model: 'local-model', refused: [], leftOut: ['topK'] },
];

const fakes = new Map<Dialect, FakeUpstream>();
beforeAll(async () => {
  for (const dialect of new Set(CASES.map((c) => c.dialect)))
    fakes.set(
      dialect,
      await startFakeProvider(dialect, () => ({ kind: 'ok', text: 'Lighthouses guide ships home.', usage: { inputTokens: 23, outputTokens: 5 } })),
    );
});
afterAll(async () => {
  for (const fake of fakes.values()) await fake.close();
});

const credential = (fake: FakeUpstream, providerSlug: string): UpstreamCredential => ({
  accountId: `acc-${providerSlug}`,
  providerSlug,
  apiKey: 'sk-profile-1',
  baseUrl: fake.baseUrl,
  timeoutMs: 2000,
});
const modelOf = (c: Case) => ({
  slug: `${c.provider}/${c.model}`,
  upstreamModel: c.model,
  features: ['TEXT', 'TOOLS'] as ('TEXT' | 'TOOLS')[],
  capabilities: { controls: c.temperature === false ? {} : { temperature: {} }, extra: {} },
});

/** What the gateway decides for each parameter, one at a time: refused (400) or left out; the rest is sent. */
function decide(adapter: ProviderAdapter, c: Case, options: TextOptions) {
  const model = modelOf(c);
  const refused = TEXT_PARAMETERS.filter((p) => {
    try {
      checkCapabilities({ model, adapter }, { [p]: options[p] }, []);
      return false;
    } catch {
      return true;
    }
  });
  const accepted = Object.fromEntries(Object.entries(options).filter(([p]) => !refused.includes(p as TextParameter))) as TextOptions;
  const leftOut = hintsLeftOut({ model, adapter }, { temperature: 0.4, options: accepted }, false);
  return { refused, leftOut, accepted };
}

/** The upstream request as text/prepare.ts builds it: the accepted parameters, without the hints left out. */
function upstreamRequest(c: Case, accepted: TextOptions, leftOut: string[]): TextRequest {
  const request: TextRequest = { model: c.model, messages, maxTokens: 64, ...accepted };
  if (leftOut.includes('temperature')) delete request.temperature;
  else request.temperature = 0.4;
  for (const hint of leftOut) delete (request as unknown as Record<string, unknown>)[hint];
  return request;
}

describe.each(CASES)('$provider $model against its strict fake', (c) => {
  const profile = profileOf(c.provider);
  const adapter = createOpenAiAdapter({ defaultBaseUrl: 'http://unused.invalid/v1', profile, streamIdleTimeoutMs: 500 });

  it('refuses, leaves out, renames and drops per the policy', () => {
    const { refused, leftOut } = decide(adapter, c, every(profile));
    expect(refused.sort()).toEqual([...c.refused].sort());
    expect(leftOut.filter((hint) => hint !== 'temperature').sort()).toEqual([...c.leftOut].sort());
    expect(leftOut.includes('temperature')).toBe(c.temperature === false);
  });

  it.each([false, true])('sends what it takes under its own names, and the fake takes it (streamed: %s)', async (streamed) => {
    const fake = fakes.get(c.dialect)!;
    const { accepted, leftOut } = decide(adapter, c, every(profile));
    const request = upstreamRequest(c, accepted, leftOut);
    const before = fake.calls().length;
    if (streamed) {
      const events = await collect(await adapter.streamText(credential(fake, c.provider), request));
      expect(textOf(events)).toBe('Lighthouses guide ships home.');
      // Billed from the provider's own count, however the provider sends it.
      expect(events.slice(-2)).toEqual([
        { type: 'usage', usage: { inputTokens: 23, outputTokens: 5 } },
        { type: 'finish', finishReason: 'stop' },
      ]);
    } else {
      const result = await adapter.generateText(credential(fake, c.provider), request);
      expect(result).toMatchObject({ text: 'Lighthouses guide ships home.', usage: { inputTokens: 23, outputTokens: 5 } });
    }
    expect(fake.calls()).toHaveLength(before + 1);
    const body = fake.calls().at(-1)!.body as Record<string, unknown>;
    expect(body[profile.tokenLimit]).toBe(64);
    expect('stream_options' in body).toBe(streamed && profile.streamUsage === 'stream_options');
    const sent = TEXT_PARAMETERS.filter((p) => accepted[p] !== undefined && !(leftOut as string[]).includes(p));
    for (const p of sent) expect(body).toHaveProperty(c.renamed?.[WIRE[p]] ?? WIRE[p]);
    for (const p of TEXT_PARAMETERS.filter((p) => !sent.includes(p))) expect(body).not.toHaveProperty(WIRE[p]);
    for (const [from, to] of Object.entries(c.renamed ?? {})) {
      expect(body).not.toHaveProperty(from);
      expect(body[to]).toBe(7);
    }
    expect('temperature' in body).toBe(c.temperature !== false);
  });
});

describe("the strict fakes refuse what OpenAI's field set sends them", () => {
  const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);
  const plain = createOpenAiAdapter({ defaultBaseUrl: 'http://unused.invalid/v1', profile: OPENAI_COMPATIBLE });

  it('Mistral: 422 for stream_options, seed and user, as the adapter sent them before profiles', async () => {
    const fake = fakes.get('mistral')!;
    const streamed = await upstreamError(plain.streamText(credential(fake, 'mistral'), { model: 'mistral-small-latest', messages, maxTokens: 64 }));
    expect(streamed).toMatchObject({ kind: 'bad_request', status: 422 });
    expect(streamed.message).toContain('stream_options');
    const seeded = await upstreamError(
      plain.generateText(credential(fake, 'mistral'), { model: 'mistral-small-latest', messages, maxTokens: 64, seed: 7, user: 'u-1' }),
    );
    expect(seeded).toMatchObject({ kind: 'bad_request', status: 422 });
    expect(seeded.message).toContain('"loc":["body","seed"]');
  });

  it('OpenAI: 400 unsupported_parameter for stop on gpt-5, unsupported_value for its temperature', async () => {
    const fake = fakes.get('openai')!;
    // Without the profile's family rules (which leave stop out of the wire), as before profiles.
    const openai = createOpenAiAdapter({ defaultBaseUrl: 'http://unused.invalid/v1', profile: OPENAI_COMPATIBLE, tokenLimitParam: 'max_completion_tokens' });
    const stop = await upstreamError(openai.generateText(credential(fake, 'openai'), { model: 'gpt-5', messages, maxTokens: 64, stop: ['END'] }));
    expect(stop).toMatchObject({ kind: 'bad_request', status: 400, code: 'unsupported_parameter' });
    const temperature = await upstreamError(openai.generateText(credential(fake, 'openai'), { model: 'gpt-5', messages, maxTokens: 64, temperature: 0.2 }));
    expect(temperature).toMatchObject({ kind: 'bad_request', status: 400, code: 'unsupported_value' });
  });

  it('xAI: 400 for stop on a reasoning model; Google: 400 for an unknown name', async () => {
    const xai = await upstreamError(plain.generateText(credential(fakes.get('xai')!, 'xai'), { model: 'grok-4-0709', messages, maxTokens: 64, stop: ['END'] }));
    expect(xai).toMatchObject({ kind: 'bad_request', status: 400, message: 'Model grok-4-0709 does not support parameter stop.' });
    const google = await upstreamError(
      plain.generateText(credential(fakes.get('google')!, 'google'), { model: 'gemini-2.5-flash', messages, maxTokens: 64, seed: 7 }),
    );
    expect(google).toMatchObject({ kind: 'bad_request', status: 400 });
    expect(google.message).toContain('Unknown name "seed"');
  });

  it("startFakeOpenAi without a dialect is OpenAI's strict fake; only ACCEPT_ANY takes an unknown field", async () => {
    const [strict, loose] = await Promise.all([startFakeOpenAi(), startFakeOpenAi(undefined, ACCEPT_ANY)]);
    const post = (fake: FakeUpstream) =>
      fetch(`${fake.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages, top_k: 40 }),
      });
    try {
      const refused = await post(strict);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { message: 'Unrecognized request argument supplied: top_k', type: 'invalid_request_error' } });
      expect((await post(loose)).status).toBe(200);
    } finally {
      await Promise.all([strict.close(), loose.close()]);
    }
  });
});

describe('profiles and the catalog', () => {
  it("every OpenAI-compatible plugin has its own profile and a case here; any other provider speaks OpenAI's field set", () => {
    const compatible = PROVIDERS.filter((plugin) => plugin.text?.profile).map((plugin) => plugin.slug);
    expect(compatible.length).toBeGreaterThan(10);
    for (const slug of compatible) expect(profileOf(slug).slug).toBe(slug);
    expect(compatible.filter((slug) => !CASES.some((c) => c.provider === slug))).toEqual([]);
    expect(profileOf('my-llm')).toBe(OPENAI_COMPATIBLE);
  });

  it("each catalog text model resolves to its provider's profile, and a family that refuses temperature has no temperature control", () => {
    const text = VENDOR_TEXT_MODELS.filter((m) => m.type !== 'EMBEDDING' && pluginOf(m.provider)?.text?.profile);
    expect(text.length).toBeGreaterThan(20);
    for (const model of text) {
      const profile = profileOf(model.provider);
      expect(profile, model.name).toBe(pluginOf(model.provider)!.text!.profile);
      const upstream = model.upstreamModel ?? model.name;
      expect(parametersFor(profile, upstream).size, model.name).toBeGreaterThan(0);
      if (familiesOf(profile, upstream).some((rule) => rule.temperature === 'refused')) {
        expect(model.capabilityOverride?.controls?.temperature, `${model.provider}/${model.name}`).toBeNull();
      }
    }
  });
});
