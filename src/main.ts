import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './app.js';
import { EmbeddedDatabaseInUseError } from './platform/db/embedded-lock.js';
import { settleHeapWhenQuiet } from './platform/runtime/heap-settle.js';

async function main(): Promise<void> {
  const startedAt = performance.now();
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const { app } = await buildApp(config);
  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    { mode: config.databaseUrl ? 'postgres' : 'embedded', startupMs: Math.round(performance.now() - startedAt), docs: `${config.publicBaseUrl}/docs` },
    'storefront is ready',
  );
  const mb = (bytes: number) => Math.round(bytes / 1048576);
  const heapSettle = settleHeapWhenQuiet({
    onSettled: (s) =>
      app.log.debug(
        { heapTotalMb: [mb(s.heapTotalBefore), mb(s.heapTotalAfter)], heapUsedMb: [mb(s.heapUsedBefore), mb(s.heapUsedAfter)] },
        'start-up garbage collected',
      ),
  });

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    heapSettle.cancel();
    app.log.info({ signal }, 'shutting down: draining requests and jobs');
    const force = setTimeout(() => {
      app.log.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5_000);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof EmbeddedDatabaseInUseError) console.error(`storefront failed to start: ${err.message}`);
  else console.error('storefront failed to start:', err);
  process.exit(1);
});
