import { eq } from 'drizzle-orm';
import { models } from '../../src/db/schema/catalog.js';
import { planModels, plans } from '../../src/db/schema/plans.js';
import { subscriptions } from '../../src/db/schema/subscriptions.js';
import type { TestApp } from './test-app.js';

/** Test helpers that change catalog and plan rows directly (as an administrator would), then drop the caches. */
export function catalogFixtures(t: TestApp) {
  return {
    async setModel(slug: string, patch: Partial<typeof models.$inferInsert>) {
      const [row] = await t.platform.db.update(models).set(patch).where(eq(models.slug, slug)).returning();
      if (!row) throw new Error(`no model ${slug}`);
      t.services.catalog.invalidate();
      return row;
    },
    async modelId(slug: string): Promise<string> {
      const entry = await t.services.catalog.getBySlug(slug);
      if (!entry) throw new Error(`no model ${slug}`);
      return entry.row.id;
    },
    /** A public plan that grants only the given models. */
    async limitedPlan(slug: string, modelSlugs: string[], priceCents = 25_000) {
      const [plan] = await t.platform.db
        .insert(plans)
        .values({
          slug,
          name: `Plan ${slug}`,
          interval: 'MONTHLY',
          priceCents,
          currency: 'BDT',
          allModels: false,
          sortOrder: 15,
          features: { apiAccess: false },
        })
        .returning();
      for (const modelSlug of modelSlugs) {
        const entry = await t.services.catalog.getBySlug(modelSlug);
        await t.platform.db.insert(planModels).values({ planId: plan!.id, modelId: entry!.row.id });
      }
      t.services.plans.invalidate();
      return plan!;
    },
    /** Puts a user on a plan (a newer active subscription wins over the sign-up one). */
    async subscribe(userId: string, planId: string, status: typeof subscriptions.$inferInsert.status = 'ACTIVE', endsAt: Date | null = null) {
      t.clock.advance(1000);
      const now = t.clock.now();
      const [row] = await t.platform.db
        .insert(subscriptions)
        .values({ userId, planId, status, origin: 'PURCHASE', startsAt: now, endsAt, createdAt: now, updatedAt: now })
        .returning();
      return row!;
    },
    /** Ends every subscription of the user. */
    async expireAll(userId: string) {
      await t.platform.db.update(subscriptions).set({ status: 'EXPIRED' }).where(eq(subscriptions.userId, userId));
    },
  };
}
