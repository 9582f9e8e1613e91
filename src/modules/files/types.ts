import type { Readable } from 'node:stream';
import type { files, FileKind } from '../../db/schema/files.js';
import type { MediaFormat } from '../../platform/media/sniff.js';

export type FileRow = typeof files.$inferSelect;

/** A stored file as the rest of the service sees it. */
export interface FileRecord {
  id: string;
  ownerId: string;
  kind: FileKind;
  status: FileRow['status'];
  key: string;
  contentType: string;
  size: number;
  sha256: string | null;
  filename: string | null;
  sourceUrl: string | null;
  url: string;
  createdAt: Date;
  readyAt: Date | null;
}

export interface InitUploadInput {
  kind: FileKind;
  contentType: string;
  size: number;
  filename?: string;
}

export interface UploadBody {
  contentType: string | undefined;
  contentLength: number | undefined;
  body: Readable;
}

export interface SaveBytesInput {
  ownerId: string;
  kind: FileKind;
  contentType: string;
  body: Buffer;
  filename?: string | null;
  /** Where the bytes came from; credential query parameters are stripped before it is recorded. */
  sourceUrl?: string | null;
}

export interface ReadSourceOptions {
  maxBytes?: number;
  timeoutMs?: number;
  /** Media families accepted (by the bytes, not the declared type); default: any. */
  accept?: ('image' | 'audio' | 'video')[];
  /** How messages name the source, e.g. "the image". */
  what?: string;
}

export interface SourceContent {
  bytes: Buffer;
  contentType: string;
  format: MediaFormat | null;
  origin: 'data' | 'file' | 'remote';
}
