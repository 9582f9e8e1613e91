// Run by `npm run build`: when migrations or seed data changed, builds the app once on an in-memory embedded database
// (migrations, pg-boss schema, catalog/plans/prompt seeds) and stores its dump for first starts.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/platform/db/database.js';
import { snapshotIsCurrent, writeEmbeddedSnapshot } from '../src/platform/db/embedded-snapshot.js';

if (!snapshotIsCurrent()) {
  const started = performance.now();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-snapshot-'));
  const database = await openDatabase({});
  try {
    // Only the reference data: no credentials, so every provider stays as seeded until a real start activates it.
    const env = { DATA_DIR: dataDir, LOG_LEVEL: 'warn', JWT_SECRET: 'snapshot-build-only-'.padEnd(40, 'x') };
    const { app, platform } = await buildApp(loadConfig(env), { database, startJobs: false });
    await platform.jobs.start({ workers: false }); // pg-boss creates its schema
    await app.close();
    await writeEmbeddedSnapshot(await database.dumpDataDir!());
  } finally {
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log(`built the embedded database snapshot in ${Math.round(performance.now() - started)} ms`);
}
