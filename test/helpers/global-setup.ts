import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import pino from 'pino';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import { prepareSchema } from '../../src/platform/db/embedded-snapshot.js';
import { adminQuery, testDatabaseUrl, withDatabaseName } from './pg-admin.js';

/** Migrates once (our schema and pg-boss's), then every test file starts from a copy. */
const prepare = (database: Database, url: string | null) => prepareSchema(database, url, pino({ level: 'silent' }));

export default async function setup(project: TestProject) {
  const adminUrl = testDatabaseUrl();
  if (adminUrl) {
    const template = `sf_template_${process.pid}`;
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await adminQuery(adminUrl, `CREATE DATABASE ${template}`);
    const url = withDatabaseName(adminUrl, template);
    const database = await openDatabase({ url });
    try {
      await prepare(database, url);
    } finally {
      await database.close();
    }
    project.provide('pgTemplate', template);
    project.provide('pgliteSnapshot', null);
    return async () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  }

  const dir = await mkdtemp(path.join(os.tmpdir(), 'storefront-snapshot-'));
  const database = await openDatabase({});
  try {
    await prepare(database, null);
    const snapshot = path.join(dir, 'snapshot.tar');
    await writeFile(snapshot, new Uint8Array(await (await database.dumpDataDir!()).arrayBuffer()));
    project.provide('pgliteSnapshot', snapshot);
    project.provide('pgTemplate', null);
  } finally {
    await database.close();
  }
  return async () => rm(dir, { recursive: true, force: true });
}
