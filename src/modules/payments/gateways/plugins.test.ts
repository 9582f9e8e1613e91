import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMemorySimStore } from './common.js';
import { channelPlugin, CHANNELS } from './index.js';
import { SANDBOX_BASE_URL, type ChannelPlugin } from './plugin.js';
import { CHANNEL_SETTINGS, type ChannelSettings } from './settings.js';
import { LIVE_VALUES } from '../../../../test/helpers/fake-gateways.js';
import { PAYMENT_TEST_ENV, paymentFixtures, SUCCESS_URL } from '../../../../test/helpers/payments.js';
import { createTestApp, json, type TestApp } from '../../../../test/helpers/test-app.js';

/**
 * Walks the list of payment channel plugins: each is complete and consistent (the checks below, shown to catch broken
 * plugins too), and each one's sandbox pays a checkout through its simulator to its adapter's verified callback.
 */
const FOLDERS = readdirSync(fileURLToPath(new URL('.', import.meta.url)), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const SETTINGS: readonly ChannelSettings[] = CHANNEL_SETTINGS;
const secret = (name: string) => `secret-${name}`;

/** What is wrong with a list of plugins; empty when every channel is complete. */
function problemsOf(list: readonly ChannelPlugin[]): string[] {
  const problems: string[] = [];
  const slugs = list.map((plugin) => plugin.settings.slug);
  for (const folder of FOLDERS) if (!slugs.includes(folder)) problems.push(`folder ${folder} has no plugin in the list`);
  if (list.length !== SETTINGS.length || list.some((plugin, i) => plugin.settings !== SETTINGS[i]))
    problems.push('the list does not follow CHANNEL_SETTINGS one for one');
  const sortOrders = list.map((plugin) => plugin.seed?.sortOrder);
  for (const plugin of list) {
    const { slug, variables, baseUrl } = plugin.settings;
    const problem = (what: string) => problems.push(`${slug}: ${what}`);
    if (slugs.indexOf(slug) !== slugs.lastIndexOf(slug)) problem('its slug is listed twice');
    if (!FOLDERS.includes(slug)) problem('no folder of that name');
    if (!/^[a-z][a-z0-9_]*$/.test(slug)) problem('the slug is not lower-case letters, digits and underscores');
    if (variables.length === 0 || variables.some((v) => !/^[A-Z][A-Z0-9_]*$/.test(v) || v === 'BASE_URL'))
      problem(`bad variables ${JSON.stringify(variables)}`);
    if (baseUrl !== null && !/^https?:\/\/[^/]/.test(baseUrl)) problem(`bad default base URL ${baseUrl}`);
    if (!plugin.seed?.name || !Number.isInteger(plugin.seed.sortOrder)) problem('no seed row (name and sort order)');
    if (sortOrders.filter((order) => order === plugin.seed?.sortOrder).length > 1) problem('its sort order is shared');
    if (!plugin.traits || !Array.isArray(plugin.traits.fields)) problem('no traits');
    if (plugin.traits?.fields.some((field) => field.type === 'select') && !plugin.seed?.carriers?.length)
      problem('a select field but no carriers to choose from');
    if (plugin.registeredAmountsOnly && !plugin.seed?.amountsCents?.length) problem('registered amounts only, but none seeded');
    if (plugin.seed?.carriers?.some((carrier) => carrier.needsPin) && !plugin.adapter(SANDBOX_BASE_URL, plugin.sandboxValues(secret), deps).verifyPin)
      problem('carriers that need a PIN, no verifyPin');
    const live = LIVE_VALUES[slug];
    if (!live || Object.keys(live).sort().join() !== [...variables].sort().join())
      problem('its live values for fake gateways (test/helpers/fake-gateways.ts) are not its variables');
    try {
      const values = plugin.sandboxValues(secret);
      if (Object.keys(values).sort().join() !== [...variables].sort().join() || Object.values(values).some((value) => !value))
        problem(`sandbox values ${Object.keys(values).join(', ')} are not its variables`);
      if (plugin.adapter(SANDBOX_BASE_URL, values, deps).slug !== slug) problem('its adapter names another channel');
      const simulator = plugin.simulator(SANDBOX_BASE_URL, values, simContext);
      if (typeof simulator.handle !== 'function' || typeof simulator.press !== 'function') problem('its simulator is incomplete');
    } catch (err) {
      problem(`its sandbox does not build: ${(err as Error).message}`);
    }
  }
  return problems;
}

const deps = { transport: () => Promise.reject(new Error('not called')), clock: { now: () => new Date() }, mode: 'sandbox' as const };
const simContext = {
  store: inMemorySimStore(),
  pageUrl: (id: string) => `${SANDBOX_BASE_URL}/${id}`,
  clock: deps.clock,
  deliver: async () => undefined,
  needsPin: async () => false,
};

describe('the channel list', () => {
  it('has every channel complete: folder, settings, seed row, traits, variables, sandbox values, adapter and simulator', () => {
    expect(problemsOf(CHANNELS)).toEqual([]);
    expect(CHANNELS.map((plugin) => plugin.settings.slug).sort()).toEqual([...FOLDERS].sort());
  });

  it('refuses an unknown slug instead of taking it for another channel', () => {
    expect(() => channelPlugin('carrier')).toThrow('unknown payment channel carrier');
    for (const plugin of CHANNELS) expect(channelPlugin(plugin.settings.slug)).toBe(plugin);
  });

  it('catches broken plugins', () => {
    const [card, ...rest] = CHANNELS as readonly ChannelPlugin[];
    const dcb = channelPlugin('dcb');
    const replaced = (broken: ChannelPlugin) => problemsOf([broken, ...rest]);
    expect(replaced({ ...card!, sandboxValues: () => ({ SECRET_KEY: 'sk_test_1' }) })).toEqual([
      'card_global: sandbox values SECRET_KEY are not its variables',
    ]);
    expect(replaced({ ...card!, seed: { name: '', sortOrder: 10 } })).toEqual(['card_global: no seed row (name and sort order)']);
    expect(replaced({ ...card!, settings: { ...card!.settings, variables: [] } })).toEqual(
      expect.arrayContaining(['the list does not follow CHANNEL_SETTINGS one for one', 'card_global: bad variables []']),
    );
    expect(replaced({ ...card!, settings: { ...card!.settings, slug: 'card_globl' } })).toEqual(
      expect.arrayContaining(['folder card_global has no plugin in the list', 'card_globl: no folder of that name']),
    );
    expect(problemsOf(rest)).toContain('folder card_global has no plugin in the list');
    expect(problemsOf([...CHANNELS, dcb])).toContain('dcb: its slug is listed twice');
    expect(problemsOf(CHANNELS.map((p) => (p === dcb ? { ...dcb, seed: { ...dcb.seed, amountsCents: [] } } : p)))).toEqual([
      'dcb: registered amounts only, but none seeded',
    ]);
    expect(problemsOf(CHANNELS.map((p) => (p === dcb ? { ...dcb, seed: { ...dcb.seed, carriers: [] } } : p)))).toEqual([
      'dcb: a select field but no carriers to choose from',
    ]);
  });
});

describe('every channel in sandbox', () => {
  let t: TestApp;
  let f: ReturnType<typeof paymentFixtures>;
  beforeAll(async () => {
    t = await createTestApp({ env: PAYMENT_TEST_ENV });
    f = paymentFixtures(t);
  });
  afterAll(async () => t?.close());

  it('is seeded and listed in its sort order', async () => {
    const listed = json<Array<{ slug: string }>>(await t.app.inject({ method: 'GET', url: '/v1/payments/channels' })).map((channel) => channel.slug);
    expect(listed).toEqual([...CHANNELS].sort((a, b) => a.seed.sortOrder - b.seed.sortOrder).map((plugin) => plugin.settings.slug));
  });

  /** What checkout's `extra` needs, from the channel's traits: a carrier that texts no PIN, a local phone number. */
  const extraFor = (plugin: ChannelPlugin): Record<string, string> =>
    Object.fromEntries(
      plugin.traits.fields.map((field) => [
        field.name,
        field.type === 'select' ? plugin.seed.carriers!.find((c) => !c.needsPin)!.value : field.type === 'tel' ? '01712345678' : 'sample',
      ]),
    );

  it.each(CHANNELS.map((plugin) => [plugin.settings.slug, plugin] as const))(
    '%s: a checkout paid on its simulator reaches its adapter as a verified callback',
    async (slug, plugin) => {
      const c = await f.customer();
      const extra = extraFor(plugin);
      const session = await f.checkoutOk(c.accessToken, {
        planId: await f.planId('starter'),
        provider: slug,
        ...(Object.keys(extra).length > 0 ? { extra } : {}),
      });
      expect((await f.pressSandbox(session.redirectUrl, 'pay')).landedOn).toBe(SUCCESS_URL);
      expect(json(await f.getPayment(c.accessToken, session.paymentId))).toMatchObject({ status: 'SUCCEEDED', fulfilment: 'FULFILLED' });
      expect(await f.events(session.paymentId)).toContainEqual(expect.objectContaining({ channel: slug, outcome: 'succeeded', source: 'callback' }));
    },
  );
});
