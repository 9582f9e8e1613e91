import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { createJobs } from '../jobs/jobs.js';
import { migrationsFolder, projectRoot } from '../paths.js';
import type { Database } from './database.js';
import { runMigrations } from './migrate.js';

/**
 * A migrated and seeded embedded database, built once (by `npm run build`), so a first start loads it in about a
 * second instead of creating, migrating and seeding a database for several.
 */
const snapshotFile = () => path.join(projectRoot(), 'dist', 'embedded-db.tar');
const keyFile = () => `${snapshotFile()}.key`;

/** Our schema and pg-boss's, as a fresh database needs them. */
export async function prepareSchema(database: Database, databaseUrl: string | null, logger: FastifyBaseLogger): Promise<void> {
  await runMigrations(database);
  const jobs = createJobs({ database, databaseUrl, logger });
  await jobs.start({ workers: false });
  await jobs.stop();
}

/**
 * Changes whenever the migrations, the seeded reference data or the versions of the schema owners (PGlite, pg-boss)
 * change. A snapshot that is stale anyway is still correct: migrations and seeding run again at start.
 */
export function snapshotKey(): string {
  const hash = createHash('sha256');
  const root = projectRoot();
  const folder = migrationsFolder();
  const sources = [
    ...readdirSync(folder).filter((f) => f.endsWith('.sql')).map((f) => path.join(folder, f)),
    ...readdirSync(path.join(root, 'src', 'modules'), { recursive: true, encoding: 'utf8' })
      .filter((f) => /(^|[/-])seed[^/]*\.ts$/.test(f) && !f.endsWith('.test.ts'))
      .map((f) => path.join(root, 'src', 'modules', f)),
    ...['@electric-sql/pglite', 'pg-boss'].map((pkg) => path.join(root, 'node_modules', pkg, 'package.json')),
  ].sort();
  for (const file of sources) hash.update(path.relative(root, file)).update(readFileSync(file));
  return hash.digest('hex');
}

export const snapshotIsCurrent = (): boolean => existsSync(snapshotFile()) && existsSync(keyFile()) && readFileSync(keyFile(), 'utf8') === snapshotKey();

/** Stores a dump of a prepared embedded database as the snapshot for first starts. */
export async function writeEmbeddedSnapshot(dump: Blob): Promise<void> {
  await mkdir(path.dirname(snapshotFile()), { recursive: true });
  await writeFile(`${snapshotFile()}.tmp`, new Uint8Array(await dump.arrayBuffer()));
  await rename(`${snapshotFile()}.tmp`, snapshotFile());
  await writeFile(keyFile(), snapshotKey());
}

/** The built snapshot, when there is one. */
export async function readEmbeddedSnapshot(): Promise<Blob | null> {
  if (!existsSync(snapshotFile())) return null;
  return new Blob([await readFile(snapshotFile())]);
}
