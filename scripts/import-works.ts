// `npm run import-works -- <feed.json>`: loads an external feed of gallery works (IMPORTED) into DATABASE_URL, or into
// the embedded database in DATA_DIR. Idempotent by externalId: running the same feed again changes nothing.
// The feed format is the gallery envelope list: `{ "items": [{ "type": "WORK", "userWork": { "workId": 1, ... } }] }`;
// scripts/community-works.sample.json is a small example.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { createWorkImporter } from '../src/modules/community/service.js';
import { systemClock } from '../src/platform/clock/clock.js';
import { openDatabase } from '../src/platform/db/database.js';
import { runMigrations } from '../src/platform/db/migrate.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: npm run import-works -- <feed.json>');
  process.exit(2);
}
const feed: unknown = JSON.parse(await readFile(file, 'utf8'));
const config = loadConfig();
const database = await openDatabase(config.databaseUrl ? { url: config.databaseUrl } : { dataDir: path.join(config.dataDir, 'db') });
try {
  await runMigrations(database);
  const result = await createWorkImporter({ db: database.db, clock: systemClock }).importFeed(feed);
  console.log(`imported ${file}: ${result.inserted} new, ${result.updated} updated, ${result.unchanged} unchanged`);
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
} finally {
  await database.close();
}
