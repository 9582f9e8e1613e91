import { existsSync } from 'node:fs';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { createAccessTokens, type AccessTokens } from './auth/access-tokens.js';
import { systemClock, type Clock } from './clock/clock.js';
import { openDatabase, type Database, type Db } from './db/database.js';
import { registerDatabaseMetrics } from './db/database-metrics.js';
import { registerListenerMetrics } from './db/listener-metrics.js';
import { unpackEmbeddedSnapshot } from './db/embedded-snapshot.js';
import { runMigrations } from './db/migrate.js';
import { sharedSecret } from './db/shared-secrets.js';
import { createEventBus, type EventBus } from './events/event-bus.js';
import { createJobs, type Jobs } from './jobs/jobs.js';
import { createMailer, mailDeliveryJob, type Mailer } from './mail/mailer.js';
import { createMetrics, type Metrics } from './metrics/metrics.js';
import { createLocalStorage, type Storage } from './storage/storage.js';
import { createS3Storage } from './storage/s3-storage.js';
import { createDatabaseStorage } from './storage/database-storage.js';
import { createSafeFetcher, type SafeFetcher } from './net/safe-fetch.js';

/** Everything the domain gets from the outside world; nothing in it knows embedded from scaled mode. */
export interface Platform {
  config: Config;
  logger: FastifyBaseLogger;
  database: Database;
  db: Db;
  clock: Clock;
  tokens: AccessTokens;
  jobs: Jobs;
  mailer: Mailer;
  storage: Storage;
  /** SSRF-safe outbound HTTP for user-supplied URLs (images, webhooks). */
  fetcher: SafeFetcher;
  events: EventBus;
  metrics: Metrics;
  redis: Redis | null;
  /** Releases what the platform opened, in reverse order. */
  close(): Promise<void>;
}

export interface PlatformOverrides {
  /** An already opened (and migrated) database, as the tests hand in. */
  database?: Database;
  clock?: Clock;
}

export async function createPlatform(configured: Config, logger: FastifyBaseLogger, overrides: PlatformOverrides = {}): Promise<Platform> {
  let config = configured;
  const database =
    overrides.database ??
    (await openDatabase(
      config.databaseUrl
        ? { url: config.databaseUrl, onError: (err) => logger.error({ err }, 'database pool error') }
        : embeddedDatabaseOptions(path.join(config.dataDir, 'db'), logger),
    ));
  await runMigrations(database);
  if (!config.jwtSecret) {
    // Scaled mode without JWT_SECRET: one generated key for every instance on this database.
    config = { ...config, jwtSecret: await sharedSecret(database, 'jwtSecret') };
    logger.info('JWT_SECRET is not set: using the key generated once in the database and shared by every instance');
  }
  if (!config.secretsEncryptionKey) {
    // Scaled mode without SECRETS_ENCRYPTION_KEY: one generated key for every instance (set the variable in production,
    // so a copy of the database alone does not open the stored credentials).
    config = { ...config, secretsEncryptionKey: await sharedSecret(database, 'secretsEncryptionKey') };
    logger.warn('SECRETS_ENCRYPTION_KEY is not set: stored provider credentials are encrypted with a key kept in the same database');
  }
  const clock = overrides.clock ?? systemClock;
  const metrics = createMetrics();
  registerDatabaseMetrics(metrics, database);
  registerListenerMetrics(metrics, database);
  const jobs = createJobs({ database, databaseUrl: config.databaseUrl, logger, metrics });
  jobs.register([mailDeliveryJob({ db: database.db, smtpUrl: config.smtpUrl, logger })]);
  // Imported only when configured: ioredis is a few MB of heap that the embedded default never uses.
  const redis = config.redisUrl
    ? new (await import('ioredis')).Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
    : null;
  redis?.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));

  return {
    config,
    logger,
    database,
    db: database.db,
    clock,
    tokens: createAccessTokens(config.jwtSecret, clock),
    jobs,
    mailer: createMailer({ db: database.db, jobs, logger, smtpUrl: config.smtpUrl, from: config.mailFrom, logBodies: config.env !== 'production' }),
    storage: openStorage(config, database),
    fetcher: createSafeFetcher({ allowPrivateNetwork: config.allowPrivateNetwork }),
    events: createEventBus(database),
    metrics,
    redis,
    async close() {
      await jobs.stop(config.shutdownTimeoutMs);
      redis?.disconnect();
      if (!overrides.database) await database.close();
    },
  };
}

/** S3 when configured; the database itself in scaled mode without S3 (every instance serves every file); else DATA_DIR. */
function openStorage(config: Config, database: Database): Storage {
  if (config.fileStorage === 's3' && config.s3) return createS3Storage(config.s3);
  if (config.fileStorage === 'database') return createDatabaseStorage(database);
  return createLocalStorage(path.join(config.dataDir, 'files'));
}

/** A new embedded database starts from the migrated snapshot `npm run build` made, when there is one. */
function embeddedDatabaseOptions(dataDir: string, logger: FastifyBaseLogger): { dataDir: string } {
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) return { dataDir };
  const fromSnapshot = unpackEmbeddedSnapshot(dataDir);
  logger.info({ dataDir, fromSnapshot }, 'creating the embedded database');
  return { dataDir };
}
