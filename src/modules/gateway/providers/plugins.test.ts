import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import type { StartTextFake } from '../../../../test/helpers/fakes/text-fake.js';
import { collect, messages, textOf } from '../../../../test/helpers/text-streams.js';
import { ManualClock } from '../../../platform/clock/clock.js';
import { SEED_MODELS, SEED_PROVIDERS } from '../../catalog/seed-data.js';
import { PROVIDERS } from './index.js';
import { mediaCapability } from './media/media-types.js';
import type { ProviderPlugin } from './plugin.js';
import type { UpstreamCredential } from './types.js';

// Walks the one list of providers (index.ts): each plugin has its folder, its strict fake and its catalog rows, and
// its adapters answer. What each OpenAI-compatible profile takes, parameter by parameter, is profiles.test.ts.

interface Catalog {
  providers: readonly { slug: string }[];
  models: readonly { provider: string }[];
}

const CATALOG: Catalog = { providers: SEED_PROVIDERS, models: SEED_MODELS };
const inFolder = (slug: string, file: string) => new URL(`./${slug}/${file}`, import.meta.url);

/** What is wrong with a list of plugins against the catalog's seeds; empty when nothing is. */
function problemsOf(plugins: readonly ProviderPlugin[], catalog: Catalog): string[] {
  const problems: string[] = [];
  const slugs = plugins.map((plugin) => plugin.slug);
  for (const slug of new Set(slugs.filter((slug, index) => slugs.indexOf(slug) !== index))) problems.push(`${slug}: listed twice`);
  for (const plugin of plugins) {
    const { slug } = plugin;
    if (!existsSync(inFolder(slug, 'plugin.ts'))) problems.push(`${slug}: no folder ${slug}/ with a plugin.ts`);
    // A built-in provider calls out to nothing, so it has nothing to fake.
    if (!plugin.builtIn && !existsSync(inFolder(slug, `${slug}.fake.ts`))) problems.push(`${slug}: no strict fake ${slug}/${slug}.fake.ts`);
    if (!plugin.text && !plugin.media) problems.push(`${slug}: neither a text nor a media part`);
    const upstream = [plugin.text, plugin.media].filter((part) => part !== undefined);
    if (!plugin.builtIn && upstream.some((part) => !part.defaultBaseUrl)) problems.push(`${slug}: a part without its default base URL`);
    const seeded = catalog.providers.some((row) => row.slug === slug) && catalog.models.some((row) => row.provider === slug);
    if (!seeded && !plugin.unseeded) problems.push(`${slug}: no catalog rows (a provider row and models in src/modules/catalog/)`);
    if (seeded && plugin.unseeded) problems.push(`${slug}: catalog rows, but its plugin says it has none`);
  }
  const catalogSlugs = new Set([...catalog.providers.map((row) => row.slug), ...catalog.models.map((row) => row.provider)]);
  for (const slug of catalogSlugs) if (!slugs.includes(slug)) problems.push(`${slug}: catalog rows, but no plugin`);
  return problems;
}

describe('the list of providers', () => {
  it('has one folder, strict fake and catalog rows per plugin, and a plugin per catalog provider', () => {
    expect(problemsOf(PROVIDERS, CATALOG)).toEqual([]);
  });

  it('refuses a plugin without its folder, fake or catalog rows, one listed twice and a catalog provider without a plugin', () => {
    const mistral = PROVIDERS.find((plugin) => plugin.slug === 'mistral')!;
    const stray: ProviderPlugin = { slug: 'stray', text: mistral.text };
    const withoutBfl = PROVIDERS.filter((plugin) => plugin.slug !== 'bfl');
    expect(problemsOf([...withoutBfl, stray, mistral], CATALOG)).toEqual([
      'mistral: listed twice',
      'stray: no folder stray/ with a plugin.ts',
      'stray: no strict fake stray/stray.fake.ts',
      'stray: no catalog rows (a provider row and models in src/modules/catalog/)',
      'bfl: catalog rows, but no plugin',
    ]);
    // A plugin in its folder but without a fake (the built-in one, were it not built in), and one without its models.
    const calling = PROVIDERS.map((plugin) => (plugin.builtIn ? { ...plugin, builtIn: false } : plugin));
    expect(problemsOf(calling, CATALOG)).toEqual(['local: no strict fake local/local.fake.ts', 'local: a part without its default base URL']);
    const noRows = { ...CATALOG, models: CATALOG.models.filter((row) => row.provider !== 'groq') };
    expect(problemsOf(PROVIDERS, noRows)).toEqual(['groq: no catalog rows (a provider row and models in src/modules/catalog/)']);
  });
});

const ANSWER = 'Lighthouses guide ships home.';
const USAGE = { inputTokens: 23, outputTokens: 5 };

/** A text model the catalog sells from the provider, by its upstream name (any name for a provider without rows). */
const upstreamModelOf = (slug: string): string => {
  const model = SEED_MODELS.find((row) => row.provider === slug && (row.type === 'TEXT' || row.type === 'MULTIMODAL'));
  return model ? (model.upstreamModel ?? model.name) : `${slug}-model`;
};

describe.each(PROVIDERS.filter((plugin) => plugin.text))('$slug: its text adapter against its own strict fake', (plugin) => {
  let fake: FakeUpstream | null = null;
  beforeAll(async () => {
    if (plugin.builtIn) return;
    const { startTextFake } = (await import(`./${plugin.slug}/${plugin.slug}.fake.ts`)) as { startTextFake: StartTextFake };
    fake = await startTextFake(() => ({ kind: 'ok', text: ANSWER, usage: USAGE }));
  });
  afterAll(async () => {
    await fake?.close();
  });

  it.each([false, true])('answers (streamed: %s)', async (streamed) => {
    const adapter = plugin.text!.create({ streamIdleTimeoutMs: 2000 });
    const credential: UpstreamCredential = {
      accountId: `acc-${plugin.slug}`,
      providerSlug: plugin.slug,
      apiKey: plugin.builtIn ? null : 'sk-walk-0001',
      baseUrl: fake?.baseUrl ?? null,
      timeoutMs: 5000,
    };
    const model = upstreamModelOf(plugin.slug);
    const request = { model, messages, maxTokens: 64 };
    const before = fake?.calls().length ?? 0;
    const answer = streamed ? textOf(await collect(await adapter.streamText(credential, request))) : (await adapter.generateText(credential, request)).text;
    if (!fake) {
      expect(answer.length).toBeGreaterThan(0);
      return;
    }
    expect(answer).toBe(ANSWER);
    expect(fake.calls()).toHaveLength(before + 1);
    expect(fake.calls().at(-1)!.body).toMatchObject({ model });
  });
});

describe('media plugins', () => {
  it.each(PROVIDERS.filter((plugin) => plugin.media).map((plugin) => [plugin.slug, plugin] as const))(
    '%s builds an adapter that makes something',
    (_slug, plugin) => {
      const adapter = plugin.media!.create({ clock: new ManualClock(), local: { videoDelayMs: 0 } });
      const made = (['generateImage', 'submitVideo', 'generateSpeech', 'generateMusic'] as const).filter(
        (capability) => mediaCapability(adapter, capability) !== null,
      );
      expect(made.length).toBeGreaterThan(0);
      expect(adapter.needsCredential).toBe(!plugin.builtIn);
    },
  );
});
