// `npm run migrate`: applies the SQL migrations to DATABASE_URL, or to the embedded database in DATA_DIR.
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/platform/db/database.js';
import { runMigrations } from '../src/platform/db/migrate.js';

const config = loadConfig();
const database = await openDatabase(config.databaseUrl ? { url: config.databaseUrl } : { dataDir: path.join(config.dataDir, 'db') });
try {
  await runMigrations(database);
  console.log(`migrations applied to the ${config.databaseUrl ? 'PostgreSQL' : 'embedded'} database`);
} finally {
  await database.close();
}
