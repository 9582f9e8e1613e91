import { createHash } from 'node:crypto';
import { and, eq, inArray, ne, not, sql } from 'drizzle-orm';
import { models, providers } from '../../db/schema/catalog.js';
import { settings } from '../../db/schema/settings.js';
import type { Db } from '../../platform/db/database.js';
import { SEED_MODELS, SEED_PROVIDERS } from './seed-data.js';

const SEED_KEY = 'seed.catalog';
const excluded = (column: string) => sql.raw(`excluded.${column}`);

/** A digest of the seed data: an unchanged seed is skipped with one query. */
export const catalogSeedDigest = createHash('sha256').update(JSON.stringify({ SEED_PROVIDERS, SEED_MODELS })).digest('hex');

/**
 * Seeds providers and models on first start and refreshes them when the seed changes; idempotent (upserts by slug).
 * Rows an administrator edited (`seed_managed = false`) are left alone; provider status is never touched after insert,
 * so a provider activated by its credential stays active. Seeded models that left the seed become RETIRED.
 */
export async function seedCatalog(db: Db, now: Date): Promise<{ seeded: boolean }> {
  const [done] = await db.select({ value: settings.value }).from(settings).where(eq(settings.key, SEED_KEY));
  if (done?.value.digest === catalogSeedDigest) return { seeded: false };

  await db.transaction(async (tx) => {
    await tx
      .insert(providers)
      .values(
        SEED_PROVIDERS.map((p) => ({
          slug: p.slug,
          name: p.name,
          website: p.website,
          builtIn: p.builtIn ?? false,
          status: p.builtIn ? ('ACTIVE' as const) : ('INACTIVE' as const),
          createdAt: now,
          updatedAt: now,
        })),
      )
      .onConflictDoUpdate({
        target: providers.slug,
        set: { name: excluded('name'), website: excluded('website'), builtIn: excluded('built_in'), updatedAt: now },
        setWhere: eq(providers.seedManaged, true),
      });
    const providerIds = new Map(
      (
        await tx
          .select({ id: providers.id, slug: providers.slug })
          .from(providers)
          .where(
            inArray(
              providers.slug,
              SEED_PROVIDERS.map((p) => p.slug),
            ),
          )
      ).map((p) => [p.slug, p.id]),
    );

    const rows = SEED_MODELS.map((m) => {
      const providerId = providerIds.get(m.provider);
      if (!providerId) throw new Error(`Seed model ${m.provider}/${m.name} names an unknown provider`);
      return {
        slug: `${m.provider}/${m.name}`,
        providerId,
        upstreamModel: m.upstreamModel ?? m.name,
        displayName: m.displayName,
        description: m.description,
        type: m.type,
        status: m.status ?? ('ACTIVE' as const),
        availability: m.availability ?? ('AVAILABLE' as const),
        features: m.features,
        inputModalities: m.inputModalities,
        outputModalities: m.outputModalities,
        maxContextTokens: m.maxContextTokens ?? null,
        maxOutputTokens: m.maxOutputTokens ?? null,
        pricing: m.pricing,
        capabilityOverride: m.capabilityOverride ?? {},
        maxBatch: m.maxBatch ?? null,
        createdAt: now,
        updatedAt: now,
      };
    });
    await tx
      .insert(models)
      .values(rows)
      .onConflictDoUpdate({
        target: models.slug,
        set: {
          providerId: excluded('provider_id'),
          upstreamModel: excluded('upstream_model'),
          displayName: excluded('display_name'),
          description: excluded('description'),
          type: excluded('type'),
          status: excluded('status'),
          availability: excluded('availability'),
          features: excluded('features'),
          inputModalities: excluded('input_modalities'),
          outputModalities: excluded('output_modalities'),
          maxContextTokens: excluded('max_context_tokens'),
          maxOutputTokens: excluded('max_output_tokens'),
          pricing: excluded('pricing'),
          capabilityOverride: excluded('capability_override'),
          updatedAt: now,
        },
        setWhere: eq(models.seedManaged, true),
      });
    await tx
      .update(models)
      .set({ availability: 'RETIRED', updatedAt: now })
      .where(
        and(
          eq(models.seedManaged, true),
          ne(models.availability, 'RETIRED'),
          not(
            inArray(
              models.slug,
              rows.map((r) => r.slug),
            ),
          ),
        ),
      );
    await tx
      .insert(settings)
      .values({ key: SEED_KEY, value: { digest: catalogSeedDigest, models: rows.length }, updatedAt: now })
      .onConflictDoUpdate({ target: settings.key, set: { value: { digest: catalogSeedDigest, models: rows.length }, updatedAt: now } });
  });
  return { seeded: true };
}
