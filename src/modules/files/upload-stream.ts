import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { AppError, badRequest } from '../../platform/http/errors.js';
import { formatBytes } from '../../platform/net/safe-fetch.js';
import { formatMatches, sniffFormat, SNIFF_BYTES, type MediaFormat } from '../../platform/media/sniff.js';

/**
 * Passes upload bytes through while checking them: never more than the declared size, exactly the declared size at
 * the end, and a first few bytes that are really of the declared content type. Fails the stream (so nothing is kept)
 * at the first violation; hashes the bytes for the ETag on the way.
 */
export class UploadInspector extends Transform {
  bytes = 0;
  format: MediaFormat | null = null;
  /** The first problem found (or the reason the stream was destroyed), whatever the consumer reports. */
  failure: Error | null = null;
  private readonly hash = createHash('sha256');
  private head: Buffer[] = [];
  private headBytes = 0;
  private sniffed = false;

  constructor(
    private readonly expectedSize: number,
    private readonly contentType: string,
  ) {
    super();
    // The consumer (storage) sees the error through its pipeline and the service through `failure`; an error emitted
    // after the consumer has let go must not become an uncaught exception.
    this.on('error', () => undefined);
  }

  get sha256(): string {
    return this.hash.copy().digest('base64url');
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.expectedSize) {
      this.fail(
        callback,
        new AppError(413, 'PAYLOAD_TOO_LARGE', `The upload is larger than the ${formatBytes(this.expectedSize)} declared when it was started.`, {
          declaredSize: this.expectedSize,
        }),
      );
      return;
    }
    if (!this.sniffed) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      if (this.headBytes >= SNIFF_BYTES) {
        const problem = this.checkFormat();
        if (problem) return this.fail(callback, problem);
      }
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (!this.sniffed) {
      const problem = this.checkFormat();
      if (problem) return this.fail(callback, problem);
    }
    if (this.bytes !== this.expectedSize) {
      this.fail(
        callback,
        badRequest(`The upload ended after ${this.bytes} bytes, but ${this.expectedSize} were declared. Upload the whole file.`, {
          declaredSize: this.expectedSize,
          receivedSize: this.bytes,
        }),
      );
      return;
    }
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (error) this.failure ??= error;
    callback(error);
  }

  private fail(callback: TransformCallback, error: Error): void {
    this.failure ??= error;
    callback(error);
  }

  private checkFormat(): AppError | null {
    this.sniffed = true;
    const head = Buffer.concat(this.head);
    this.head = [];
    this.format = sniffFormat(head);
    if (this.format && formatMatches(this.contentType, this.format)) return null;
    return badRequest(
      this.format
        ? `The file's bytes are ${this.format.toUpperCase()}, not the declared ${this.contentType}. Start again declaring the real type.`
        : `The file's bytes are not ${this.contentType} (its first bytes do not match that format).`,
      { declaredContentType: this.contentType, detectedFormat: this.format },
    );
  }
}
