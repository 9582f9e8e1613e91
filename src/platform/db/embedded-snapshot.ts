import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
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
    ...readdirSync(folder)
      .filter((f) => f.endsWith('.sql'))
      .map((f) => path.join(folder, f)),
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

/**
 * Unpacks the built snapshot into `dataDir`, which holds no database yet; false when there is no snapshot or another
 * process filled `dataDir` first. Read from the file a piece at a time: handed to PGlite as `loadDataDir`, the tarball
 * was in memory three times over (our read, the Blob, PGlite's copy) and stayed there as garbage until a collection
 * came, ~100 MB of an idle service. Written beside and renamed into place, so an interrupted start leaves no half-made
 * database.
 */
export function unpackEmbeddedSnapshot(dataDir: string): boolean {
  if (!existsSync(snapshotFile())) return false;
  const staging = `${dataDir}.unpacking-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    extractTarball(snapshotFile(), staging);
    renameSync(staging, dataDir); // replaces a missing or empty directory only
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Writes the directories and files of a ustar archive (what PGlite's `dumpDataDir` makes) under `into`. */
function extractTarball(tarball: string, into: string): void {
  const root = path.resolve(into);
  mkdirSync(root, { recursive: true });
  const header = Buffer.alloc(512);
  const chunk = Buffer.allocUnsafe(1024 * 1024);
  const input = openSync(tarball, 'r');
  try {
    // The archive ends with zeroed blocks (or simply ends).
    for (let offset = 0; readSync(input, header, 0, 512, offset) === 512 && header[0] !== 0;) {
      offset += 512;
      const field = (start: number, length: number) => header.toString('latin1', start, start + length).split('\0')[0]!;
      const name = path.join(field(345, 131), field(0, 100)); // ustar's prefix, then the name
      const size = parseInt(field(124, 12).trim(), 8) || 0;
      const target = path.join(root, name);
      if (target !== root && !target.startsWith(root + path.sep)) throw new Error(`the embedded snapshot names a path outside its directory: ${name}`);
      const type = String.fromCharCode(header[156]!);
      if (type === '5') mkdirSync(target, { recursive: true });
      else if (type === '0' || type === '\0') {
        mkdirSync(path.dirname(target), { recursive: true });
        const output = openSync(target, 'w');
        try {
          for (let copied = 0; copied < size;) {
            const read = readSync(input, chunk, 0, Math.min(chunk.length, size - copied), offset + copied);
            if (read === 0) throw new Error(`the embedded snapshot ends inside ${name}`);
            writeSync(output, chunk, 0, read);
            copied += read;
          }
        } finally {
          closeSync(output);
        }
      }
      offset += Math.ceil(size / 512) * 512;
    }
  } finally {
    closeSync(input);
  }
}
