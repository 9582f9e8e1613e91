import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { migrate as migrateNodePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrationsFolder } from '../paths.js';
import type { Database } from './database.js';

/** An arbitrary constant: the advisory lock that serialises migrations across instances starting together. */
const MIGRATION_LOCK_ID = 724_917_301;

/** Applies the generated SQL migrations in src/db/migrations; safe to call from several instances at once. */
export async function runMigrations(database: Database): Promise<void> {
  const folder = migrationsFolder();
  if (database.kind === 'pglite') {
    await migratePglite(database.db as unknown as PgliteDatabase<Record<string, never>>, { migrationsFolder: folder });
    return;
  }
  await database.withAdvisoryLock(MIGRATION_LOCK_ID, () =>
    migrateNodePg(database.db as unknown as NodePgDatabase<Record<string, never>>, { migrationsFolder: folder }),
  );
}
