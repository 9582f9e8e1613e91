import { eq } from 'drizzle-orm';
import { providerAccounts } from '../../../src/db/schema/gateway.js';
import type { TestApp } from '../test-app.js';

/** Marks every account of a provider healthy again and the provider ACTIVE (a test left it failing on purpose). */
export async function healthyAccounts(t: Pick<TestApp, 'platform' | 'services'>, providerSlug: string): Promise<void> {
  await t.platform.db
    .update(providerAccounts)
    .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null })
    .where(eq(providerAccounts.providerSlug, providerSlug));
  await t.services.catalog.setProviderStatus(providerSlug, 'ACTIVE');
  t.services.gateway.pool.refresh();
}
