import type { Readable } from 'node:stream';
import yazl from 'yazl';
import type { Storage, StoredObject } from '../../platform/storage/storage.js';

/** One file of a data export: its path inside the section's folder and its bytes (or a stream opened when written). */
export interface ExportFile {
  path: string;
  content: Buffer | string | (() => Promise<Readable>);
  /** Stored files are written as they are; JSON is compressed. */
  compress?: boolean;
}

/**
 * A part of the data export contributed by a module: its folder name and the files describing the user's data.
 * Modules add their own (generations with their media files, API keys, payments ...) through the account service.
 */
export interface ExportSection {
  name: string;
  collect(userId: string): Promise<ExportFile[]>;
}

export const jsonFile = (path: string, data: unknown): ExportFile => ({ path, content: `${JSON.stringify(data, null, 2)}\n`, compress: true });

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._ -]*$/;

/** Refuses paths that could escape the archive's folders when it is unpacked. */
function archivePath(section: string, path: string): string {
  const parts = [section, ...path.split('/')];
  for (const part of parts) {
    if (!SAFE_SEGMENT.test(part) || part === '.' || part === '..' || part.length > 200) throw new Error(`Unsafe path in data export: ${section}/${path}`);
  }
  return parts.join('/');
}

const README = (generatedAt: Date) =>
  [
    'Storefront data export',
    `Generated at ${generatedAt.toISOString()}.`,
    '',
    'Each folder holds one part of your account as JSON files (UTF-8, ISO-8601 UTC timestamps);',
    'media files of your generations keep their original formats. manifest.json lists every file.',
    '',
  ].join('\n');

/**
 * Writes a ZIP archive of the given sections to storage under `key`, streaming: file bytes are never all in memory.
 */
export async function writeArchive(storage: Storage, key: string, userId: string, sections: ExportSection[], now: Date): Promise<StoredObject> {
  const collected: Array<{ name: string; files: ExportFile[] }> = [];
  for (const section of sections) collected.push({ name: section.name, files: await section.collect(userId) });

  const zip = new yazl.ZipFile();
  const output = zip.outputStream as unknown as Readable;
  // A file that cannot be read fails the archive. The error may come before storage starts reading the stream,
  // so it is kept here (and the stream's own error event is expected) rather than left unhandled.
  // Set from stream callbacks, so it is declared wide (TypeScript would otherwise narrow it to null for good).
  let failure = null as Error | null;
  zip.on('error', (err: Error) => {
    failure ??= err;
    output.destroy(err);
  });
  output.on('error', () => undefined);
  const options = { mtime: now };
  const manifest = { generatedAt: now.toISOString(), sections: [] as Array<{ name: string; files: string[] }> };
  zip.addBuffer(Buffer.from(README(now)), 'README.txt', options);

  for (const { name, files } of collected) {
    const paths: string[] = [];
    for (const file of files) {
      const path = archivePath(name, file.path);
      paths.push(path);
      const { content } = file;
      if (typeof content === 'function') {
        zip.addReadStreamLazy(path, { ...options, compress: file.compress ?? false }, (callback) => {
          content().then(
            (stream) => callback(null, stream),
            (err: unknown) => callback(err, undefined as never),
          );
        });
      } else {
        zip.addBuffer(Buffer.isBuffer(content) ? content : Buffer.from(content), path, { ...options, compress: file.compress ?? true });
      }
    }
    manifest.sections.push({ name, files: paths });
  }
  zip.addBuffer(Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`), 'manifest.json', options);
  zip.end();
  try {
    const stored = await storage.put(key, output);
    if (failure) throw failure;
    return stored;
  } catch (err) {
    if (failure) await storage.delete(key).catch(() => undefined);
    throw failure ?? err;
  }
}
