// GET /v1/models with 500+ models (the 90-odd seeded ones plus 500 extra, all listed), anonymous and signed in,
// against GET /healthz on the same server. Embedded PGlite by default; DATABASE_URL=postgres://... runs it on a
// temporary database of that PostgreSQL server.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ManualClock } from '../src/platform/clock/clock.js';
import { openDatabase, type Database } from '../src/platform/db/database.js';
import { runMigrations } from '../src/platform/db/migrate.js';
import { models, providers, type ModelType } from '../src/db/schema/catalog.js';
import { planModels, plans } from '../src/db/schema/plans.js';
import { createCatalogService } from '../src/modules/catalog/service.js';
import { createPlansService } from '../src/modules/plans/service.js';
import { load, report, signUpForBench, startServer } from './lib.js';

const EXTRA_MODELS = Number(process.env.BENCH_EXTRA_MODELS ?? 500);
const TYPES: ModelType[] = ['TEXT', 'MULTIMODAL', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING'];

/** Seeds the catalog and plans, then 500 extra listed models (with per-model capability overrides) and a plan granting half. */
async function prepare(database: Database): Promise<void> {
  await runMigrations(database);
  const clock = new ManualClock();
  const catalog = createCatalogService({ db: database.db, clock });
  await catalog.seed();
  await createPlansService({ db: database.db, clock, catalog }).seed();
  const [provider] = await database.db.insert(providers).values({ slug: 'benchmark', name: 'Benchmark Provider', status: 'ACTIVE' }).returning();
  const rows = Array.from({ length: EXTRA_MODELS }, (_, i) => {
    const type = TYPES[i % TYPES.length]!;
    const features =
      type === 'TEXT'
        ? ['TEXT', 'TOOLS']
        : type === 'MULTIMODAL'
          ? ['TEXT', 'VISION']
          : type === 'IMAGE'
            ? ['IMAGE_GENERATION', 'IMAGE_EDIT']
            : type === 'VIDEO'
              ? ['VIDEO_GENERATION']
              : type === 'AUDIO'
                ? i % 2
                  ? ['TTS']
                  : ['MUSIC']
                : ['EMBEDDING'];
    const pricing =
      type === 'IMAGE'
        ? { currency: 'USD', image: 3 + (i % 7) }
        : type === 'VIDEO'
          ? { currency: 'USD', second: 5 + (i % 11) }
          : type === 'AUDIO'
            ? i % 2
              ? { currency: 'USD', '1k_chars': 2.5 }
              : { currency: 'USD', generation: 15 }
            : { currency: 'USD', '1m_input_tokens': 10 + i, '1m_output_tokens': 40 + 2 * i };
    return {
      slug: `benchmark/model-${String(i).padStart(4, '0')}`,
      providerId: provider!.id,
      upstreamModel: `model-${i}`,
      displayName: `Benchmark Model ${i}`,
      description: `A synthetic ${type.toLowerCase()} model for the catalog benchmark.`,
      type,
      features: features as never,
      inputModalities: ['text'],
      outputModalities: [type.toLowerCase()],
      maxContextTokens: type === 'TEXT' || type === 'MULTIMODAL' ? 128_000 : null,
      maxOutputTokens: type === 'TEXT' || type === 'MULTIMODAL' ? 8192 : null,
      pricing,
      capabilityOverride: i % 3 === 0 ? { controls: { seed: null }, flags: { tier: i % 5 } } : {},
    };
  });
  const inserted = await database.db.insert(models).values(rows).returning({ id: models.id });
  const [plan] = await database.db
    .insert(plans)
    .values({ slug: 'bench-half', name: 'Half the catalog', interval: 'MONTHLY', priceCents: 30_000, currency: 'BDT', allModels: false, sortOrder: 25 })
    .returning();
  await database.db.insert(planModels).values(inserted.filter((_, i) => i % 2 === 0).map((m) => ({ planId: plan!.id, modelId: m.id })));
}

const databaseUrl = process.env.DATABASE_URL;
let cleanup: () => Promise<void>;
let env: Record<string, string>;
if (databaseUrl) {
  const name = `sf_bench_catalog_${process.pid}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ url: url.toString() });
  await prepare(database);
  await database.close();
  env = { DATABASE_URL: url.toString() };
  cleanup = () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
} else {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-bench-catalog-'));
  const database = await openDatabase({ dataDir: path.join(dataDir, 'db') });
  await prepare(database);
  await database.close();
  env = { DATA_DIR: dataDir };
  cleanup = () => rm(dataDir, { recursive: true, force: true });
}

const server = await startServer(env);
try {
  const accessToken = await signUpForBench(server.url);
  const auth = { authorization: `Bearer ${accessToken}` };
  const listing = await fetch(`${server.url}/v1/models`, { headers: auth });
  const body = await listing.text();
  const count = (JSON.parse(body) as { items: unknown[] }).items.length;
  console.log(`GET /v1/models lists ${count} models (${(body.length / 1024).toFixed(0)} KB)`);

  await load('warm-up', { url: `${server.url}/v1/models`, durationSeconds: 2 });
  const health = await load('GET /healthz', { url: `${server.url}/healthz` });
  const anonymous = await load('GET /v1/models (anonymous)', { url: `${server.url}/v1/models` });
  const signedIn = await load('GET /v1/models (signed in: allowed, availableOn)', { url: `${server.url}/v1/models`, headers: auth });
  const filtered = await load('GET /v1/models?type=IMAGE (signed in)', { url: `${server.url}/v1/models?type=IMAGE`, headers: auth });
  const mine = await load('GET /v1/models/me', { url: `${server.url}/v1/models/me`, headers: auth });
  report(`Catalog listing with ${count} models (${databaseUrl ? 'PostgreSQL' : 'embedded PGlite'})`, [health, anonymous, signedIn, filtered, mine], health);
} finally {
  await server.stop();
  await cleanup();
}
