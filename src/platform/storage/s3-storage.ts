import { PassThrough, Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type * as S3UploadSdk from '@aws-sdk/lib-storage';
import { assertSafeKey, StoredObjectMissing, type Storage } from './storage.js';

/** The bucket and how to reach it; `loadConfig` reads them from the S3_* variables. */
export interface S3Settings {
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, ...); null for AWS itself. */
  endpoint: string | null;
  /** Both null: the SDK's default credential chain (environment, instance role, ...). */
  accessKeyId: string | null;
  secretAccessKey: string | null;
  forcePathStyle: boolean;
  /** Optional key prefix inside the bucket, so one bucket can hold several deployments. */
  prefix?: string;
}

/** Streams larger than this are uploaded in parts; smaller ones go in one PutObject. */
const PART_SIZE = 8 * 1024 * 1024;

/**
 * The AWS SDK (~10 MB of heap) is loaded by the first storage call, so a service that keeps its files elsewhere never
 * carries it.
 */
interface LoadedSdk {
  s3: typeof S3Sdk;
  upload: typeof S3UploadSdk;
}
let sdk: Promise<LoadedSdk> | undefined;
const loadSdk = (): Promise<LoadedSdk> =>
  (sdk ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([s3, upload]) => ({ s3, upload })));

const isNotFound = ({ S3ServiceException }: typeof S3Sdk, err: unknown): boolean =>
  err instanceof S3ServiceException
    ? err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata?.httpStatusCode === 404
    : (err as { name?: string })?.name === 'NotFound' || (err as { name?: string })?.name === 'NoSuchKey';

/** Storage in an S3-compatible bucket, used when S3_BUCKET is configured. */
export function createS3Storage(settings: S3Settings, client?: S3Client): Storage {
  let ready: Promise<{ sdk: LoadedSdk; s3: S3Client }> | undefined;
  const connect = (): Promise<{ sdk: LoadedSdk; s3: S3Client }> =>
    (ready ??= loadSdk().then((loaded) => ({ sdk: loaded, s3: client ?? newClient(loaded.s3, settings) })));
  const Bucket = settings.bucket;
  const objectKey = (key: string) => {
    assertSafeKey(key);
    return settings.prefix ? `${settings.prefix.replace(/\/+$/, '')}/${key}` : key;
  };

  return {
    kind: 's3',
    async put(key, body, options = {}) {
      const Key = objectKey(key);
      const ContentType = options.contentType;
      const { sdk, s3 } = await connect();
      if (Buffer.isBuffer(body)) {
        await s3.send(new sdk.s3.PutObjectCommand({ Bucket, Key, Body: body, ContentLength: body.length, ContentType }));
        return { key, size: body.length };
      }
      // A stream of unknown length: counted on the way through, uploaded in parts when it is large.
      let size = 0;
      const counted = new PassThrough();
      counted.on('data', (chunk: Buffer) => {
        size += chunk.length;
      });
      body.on('error', (err) => counted.destroy(err));
      body.pipe(counted);
      await new sdk.upload.Upload({
        client: s3,
        params: { Bucket, Key, Body: counted, ContentType },
        partSize: PART_SIZE,
        queueSize: 2,
        leavePartsOnError: false,
      }).done();
      return { key, size };
    },
    async stat(key) {
      const { sdk, s3 } = await connect();
      try {
        const head = await s3.send(new sdk.s3.HeadObjectCommand({ Bucket, Key: objectKey(key) }));
        return { size: Number(head.ContentLength ?? 0), modifiedAt: head.LastModified ?? new Date(0) };
      } catch (err) {
        if (isNotFound(sdk.s3, err)) return null;
        throw err;
      }
    },
    async read(key, range) {
      const { sdk, s3 } = await connect();
      const result = await s3
        .send(new sdk.s3.GetObjectCommand({ Bucket, Key: objectKey(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }))
        .catch((err: unknown) => {
          throw isNotFound(sdk.s3, err) ? new StoredObjectMissing(key) : err;
        });
      const body = result.Body;
      if (!body) throw new Error(`S3 returned no body for ${key}`);
      return body instanceof Readable ? body : Readable.fromWeb(body.transformToWebStream() as Parameters<typeof Readable.fromWeb>[0]);
    },
    async delete(key) {
      const { sdk, s3 } = await connect();
      try {
        await s3.send(new sdk.s3.DeleteObjectCommand({ Bucket, Key: objectKey(key) }));
      } catch (err) {
        if (!isNotFound(sdk.s3, err)) throw err;
      }
    },
  };
}

/** A client of the configured bucket's endpoint. */
function newClient({ S3Client }: typeof S3Sdk, settings: S3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle,
    ...(settings.accessKeyId && settings.secretAccessKey
      ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } }
      : {}),
    // Checksums only where S3 requires them: many S3-compatible servers reject the newer default trailers.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
