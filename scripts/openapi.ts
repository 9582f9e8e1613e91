// `npm run openapi`: regenerates docs/openapi.json from the route schemas (CI fails when it drifts).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/platform/db/database.js';

export const OPENAPI_FILE = path.join(import.meta.dirname, '..', 'docs', 'openapi.json');

export const renderOpenApi = (document: unknown): string => JSON.stringify(document, null, 2) + '\n';

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-openapi-'));
const database = await openDatabase({});
try {
  const { app } = await buildApp(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', JWT_SECRET: 'x'.repeat(40) }), { database, startJobs: false });
  await writeFile(OPENAPI_FILE, renderOpenApi(app.swagger()));
  await app.close();
  console.log(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)}`);
} finally {
  await database.close();
  await rm(dataDir, { recursive: true, force: true });
}
