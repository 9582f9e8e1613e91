import { describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../src/app.js';
import { within } from '../helpers/eventually.js';
import { twoInstances } from '../helpers/shared-database.js';
import { bearer, signUpAs } from '../helpers/test-app.js';

/**
 * The catalog snapshot, the plans snapshot and the top-up terms: each one entry of an invalidating cache per instance.
 * Two instances on one database: concurrent misses share one load, and a change made through one instance is seen by
 * the other within a second (and by the one that made it at once).
 */
const instances = twoInstances('snapshot-caches');
const statements = (on: BuiltApp) => on.platform.database.statementCounts().statements;

describe('the catalog snapshot', () => {
  it('two concurrent misses share one load (three statements)', async () => {
    const { catalog } = instances.a.services;
    await catalog.snapshot(); // listening already: the count below is the load alone
    catalog.invalidate();
    const before = statements(instances.a);
    const [first, second] = await Promise.all([catalog.snapshot(), catalog.snapshot()]);
    expect(second).toBe(first);
    expect(statements(instances.a) - before).toBe(3);
    expect(await catalog.snapshot()).toBe(first);
  });

  it("a provider's status changed on A shows on B within a second", async () => {
    const { a, b } = instances;
    const status = async (on: BuiltApp) => (await on.services.catalog.snapshot()).providersBySlug.get('local')?.status;
    expect(await status(a)).toBe('ACTIVE');
    expect(await status(b)).toBe('ACTIVE');
    await a.services.catalog.setProviderStatus('local', 'DEGRADED');
    try {
      expect(await status(a)).toBe('DEGRADED');
      expect(await within(async () => (await status(b)) === 'DEGRADED', 1000)).toBeLessThan(1000);
    } finally {
      await a.services.catalog.setProviderStatus('local', 'ACTIVE');
    }
    expect(await within(async () => (await status(b)) === 'ACTIVE', 1000)).toBeLessThan(1000);
  });
});

describe('the plans snapshot', () => {
  it('two concurrent misses share one load (two statements)', async () => {
    const { plans } = instances.a.services;
    await plans.access();
    plans.invalidate();
    const before = statements(instances.a);
    const [first, second] = await Promise.all([plans.access(), plans.access()]);
    expect(second).toBe(first); // one access memo per snapshot: one snapshot
    expect(statements(instances.a) - before).toBe(2);
    expect(await plans.access()).toBe(first);
  });

  it('a model allowed on a plan on A is allowed on B within a second; disallowed, likewise', async () => {
    const { a, b } = instances;
    const plan = (await a.services.plans.playgroundPlan())!; // a plan with its own model list
    const model = (await a.services.catalog.resolveForGateway('local/text')).id;
    const allowed = (on: BuiltApp) => on.services.plans.isModelAllowed(plan.id, model);
    await a.services.plans.disallowModel(plan.id, model);
    expect(await allowed(a)).toBe(false);
    expect(await within(async () => !(await allowed(b)), 1000)).toBeLessThan(1000);

    await a.services.plans.allowModel(plan.id, model);
    expect(await allowed(a)).toBe(true);
    expect(await within(() => allowed(b), 1000)).toBeLessThan(1000);
    await b.services.plans.disallowModel(plan.id, model);
    expect(await allowed(b)).toBe(false);
    expect(await within(async () => !(await allowed(a)), 1000)).toBeLessThan(1000);
  });
});

describe('the top-up terms', () => {
  it('concurrent reads after a change share one reload; peekTerms never answers the dropped copy', async () => {
    const { topup } = instances.a.services;
    const before = await topup.terms();
    const announced = topup.termsChanged(); // dropped at once, and reloaded in the background
    expect(topup.peekTerms()).toBeNull();
    const [first, second] = await Promise.all([topup.terms(), topup.terms()]);
    expect(second).toBe(first);
    expect(first).not.toBe(before);
    expect(first).toEqual(before);
    await announced;
  });

  it('a threshold changed on A is in the terms B peeks at within a second', async () => {
    const { a, b } = instances;
    const operator = await signUpAs({ app: a.app, platform: a.platform }, 'SUPER_ADMIN');
    const threshold = (b.services.topup.peekTerms() ?? (await b.services.topup.terms())).lowBalanceThresholdTokens + 1_000;
    const set = await a.app.inject({
      method: 'PUT',
      url: '/v1/admin/topup/settings',
      headers: bearer(operator.accessToken),
      payload: { lowBalanceThresholdTokens: threshold },
    });
    expect(set.statusCode, set.body).toBe(200);
    expect((await a.services.topup.terms()).lowBalanceThresholdTokens).toBe(threshold);
    // B reloads as soon as the notification drops its copy; peekTerms never waits for that.
    expect(await within(async () => b.services.topup.peekTerms()?.lowBalanceThresholdTokens === threshold, 1000)).toBeLessThan(1000);
  });
});
