import { randomBytes } from 'node:crypto';
import type { FileKind } from '../../db/schema/files.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { InvalidatingCache } from '../../platform/events/invalidating-cache.js';
import type { SafeFetcher } from '../../platform/net/safe-fetch.js';
import type { Storage } from '../../platform/storage/storage.js';
import { extensionFor } from './kinds.js';
import type { FileRecord, FileRow } from './types.js';

/** What the parts of the files service share; built once by `createFilesService`. */
export interface FilesContext {
  db: Db;
  clock: Clock;
  storage: Storage;
  fetcher: SafeFetcher;
  publicBaseUrl: string;
  /** Bytes of READY files per owner: dropped when a file becomes READY. */
  storageUsed: InvalidatingCache<number>;
  rawUrl: (key: string) => string;
  /** The storage key of one of our raw-file URLs, else null (raw-urls.ts). */
  ownKeyOf: (url: string) => string | null;
  toRecord: (row: FileRow) => FileRecord;
  rowById: (id: string) => Promise<FileRow | null>;
}

/** An unguessable key that is never reused: the kind, the UUIDv7 and 128 random bits. */
export const newKey = (kind: FileKind, id: string, contentType: string) =>
  `${kind.toLowerCase().replace('_', '-')}/${id}-${randomBytes(16).toString('hex')}.${extensionFor(contentType)}`;

/** The text with its first letter capitalised (messages that start with a rule's label). */
export const cap = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
