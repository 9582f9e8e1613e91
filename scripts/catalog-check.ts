// `npm run catalog:check [-- --json]`: asks every configured provider which models it serves and reports the
// differences with the catalog (docs/operations.md, "The catalog check"). It builds the same platform and services as
// the server, from the same environment (DATA_DIR or DATABASE_URL, the <PREFIX>_API_KEY accounts), and changes
// nothing. With the embedded database the server holds it: ask the running server instead,
// GET /v1/admin/catalog/provider-check. Exit codes: 0 nothing to act on; 3 a catalog model is no longer served or a
// provider did not answer; 1 the check itself failed; 2 a usage error.
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform/platform.js';
import { EmbeddedDatabaseInUseError } from '../src/platform/db/embedded-lock.js';
import { createServices } from '../src/services.js';
import { createProviderCheck, formatProviderCheck, needsAction } from '../src/modules/catalog/provider-check.js';

const USAGE = 'Usage: npm run catalog:check [-- --json]';

async function main(argv: string[]): Promise<number> {
  const unknown = argv.filter((arg) => arg !== '--json');
  if (unknown.length > 0) {
    console.error(`Unknown argument "${unknown[0]}".\n${USAGE}`);
    return 2;
  }
  const config = loadConfig();
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' }) as unknown as FastifyBaseLogger;
  const platform = await createPlatform(config, logger);
  try {
    const services = createServices(platform);
    // The catalog as stored, not seeded first: the check changes nothing, and compares what customers are sold now.
    const check = createProviderCheck({ snapshot: () => services.catalog.snapshot(), upstream: services.gateway.upstreamModels, clock: platform.clock });
    const report = await check.run();
    console.log(argv.includes('--json') ? JSON.stringify(report, null, 2) : formatProviderCheck(report));
    services.wallet.stop();
    return needsAction(report) ? 3 : 0;
  } finally {
    await platform.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof EmbeddedDatabaseInUseError) console.error(`${err.message}\nWhile the server runs, ask it: GET /v1/admin/catalog/provider-check.`);
    else console.error('catalog check failed:', err);
    process.exit(1);
  },
);
