import { bigint, customType, index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

/** Every outgoing mail; delivered by a job when SMTP is configured, otherwise kept here and logged. */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: idColumn(),
    to: text('to').notNull(),
    from: text('from').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    html: text('html'),
    status: text('status', { enum: ['QUEUED', 'SENT', 'FAILED', 'STORED'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    createdAt: createdAt(),
    sentAt: tz('sent_at'),
  },
  (t) => [index('mail_outbox_to_idx').on(t.to, t.createdAt)],
);

/** Secrets the service generates for itself when none is configured, shared by every instance on this database. */
export const platformSecrets = pgTable('platform_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: createdAt(),
});
/**
 * The domain-event outbox: an event is written in the same transaction as the change it announces, so it exists
 * exactly when the change committed. The webhook engine (modules/webhooks/engine.ts) fans out rows with `dispatchedAt`
 * null and marks them dispatched.
 */
export const domainEvents = pgTable(
  'domain_events',
  {
    id: idColumn(),
    /** e.g. `job.succeeded`, `job.failed`, `generation.persisted`. */
    name: text('name').notNull(),
    /** The user the event concerns (whose webhooks receive it), when there is one. */
    userId: text('user_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
    dispatchedAt: tz('dispatched_at'),
  },
  (t) => [index('domain_events_pending_idx').on(t.dispatchedAt, t.createdAt, t.id)],
);

/** bytea: Buffer in, Buffer (pg) or Uint8Array (PGlite) out; the storage normalises to Buffer. */
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' });

/**
 * File bytes kept in the database (the shared default storage of scaled mode without S3): one row per stored key
 * naming the version its chunks belong to, so an overwrite switches versions in one statement and a reader never sees
 * half of a file.
 */
export const storageObjects = pgTable('storage_objects', {
  key: text('key').primaryKey(),
  version: uuid('version').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  chunkSize: integer('chunk_size').notNull(),
  contentType: text('content_type'),
  modifiedAt: tz('modified_at').notNull().defaultNow(),
});

/** The bytes of one version, in chunks of `chunk_size` (1 MiB), so a file streams and a Range reads only its chunks. */
export const storageChunks = pgTable(
  'storage_chunks',
  {
    version: uuid('version').notNull(),
    seq: integer('seq').notNull(),
    data: bytea('data').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.version, t.seq] })],
);
