import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { AppError, notFound } from '../../platform/http/errors.js';
import { IdParams, errorResponses } from '../../platform/http/schemas.js';
import { assertSafeKey } from '../../platform/storage/storage.js';
import { notModified, parseRange, rangeStillValid } from './http-range.js';
import { FileResponse, InitUploadBody, InitUploadResponse, RawParams, UploadParams, UploadQuery } from './schemas.js';
import type { FileRecord, FilesService } from './service.js';

export interface FilesRoutesOptions {
  files: FilesService;
}

const Binary = Type.String({ format: 'binary' });

/** Stored keys are unique and their bytes never change, so browsers and CDNs may keep them for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

const toResponse = (file: FileRecord) => ({
  id: file.id,
  kind: file.kind,
  status: file.status,
  contentType: file.contentType,
  size: file.size,
  filename: file.filename,
  url: file.url,
  createdAt: file.createdAt.toISOString(),
  readyAt: file.readyAt?.toISOString() ?? null,
});

/** `inline` with the original name: an ASCII fallback and the exact UTF-8 name (RFC 6266 / RFC 8187). */
const contentDisposition = (filename: string) =>
  `inline; filename="${filename.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;

const isSafeKey = (key: string) => {
  try {
    assertSafeKey(key);
    return true;
  } catch {
    return false;
  }
};

export const filesRoutes: FastifyPluginAsyncTypebox<FilesRoutesOptions> = async (app, { files }) => {
  const tags = ['files'];

  app.post(
    '/v1/files/init',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Start an upload: get a single-use upload URL (valid 15 minutes) for one file',
        body: InitUploadBody,
        response: { 201: InitUploadResponse, ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const started = await files.initUpload(principalOf(request).userId, request.body);
      return reply.code(201).send({ ...started, expiresAt: started.expiresAt.toISOString() });
    },
  );

  app.get(
    '/v1/files/:id',
    {
      config: { auth: 'required' },
      schema: { tags, summary: 'One of your files', params: IdParams, response: { 200: FileResponse, ...errorResponses(401, 404) } },
    },
    async (request) => toResponse(await files.getOwnFile(principalOf(request).userId, request.params.id)),
  );

  // The upload step reads the raw body itself, streaming it into storage; no parser buffers it first.
  await app.register(async (scope) => {
    const uploads = scope.withTypeProvider<TypeBoxTypeProvider>();
    uploads.removeAllContentTypeParsers();
    uploads.addContentTypeParser('*', (_request, _payload, done) => done(null));
    uploads.put(
      '/v1/files/upload/:fileId',
      {
        config: { openapi: { binaryBody: true } },
        schema: {
          tags,
          summary: 'Upload the bytes (step two); authorised by the token in the URL, not by a Bearer header',
          params: UploadParams,
          querystring: UploadQuery,
          response: { 200: FileResponse, ...errorResponses(400, 403, 409, 413) },
        },
      },
      async (request, reply) => {
        const length = request.headers['content-length'];
        try {
          const file = await files.completeUpload(request.params.fileId, request.query.token, {
            contentType: request.headers['content-type'],
            contentLength: length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined,
            body: request.raw,
          });
          return toResponse(file);
        } catch (err) {
          // The client may still be sending a body we refused; close the connection after answering.
          reply.header('connection', 'close');
          throw err;
        }
      },
    );
  });

  // GET and HEAD share the handler; HEAD is declared here (not derived by Fastify) so it keeps the real Content-Length.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/v1/files/raw/*',
    exposeHeadRoute: false,
    schema: {
      tags,
      summary: 'The stored bytes (public by link; supports Range, ETag and Last-Modified)',
      params: RawParams,
      response: {
        200: { description: 'The whole file', content: { '*/*': { schema: Binary } } },
        206: { description: 'The requested byte range (Content-Range names it)', content: { '*/*': { schema: Binary } } },
        304: { description: 'Not modified (If-None-Match or If-Modified-Since matched)', type: 'null' },
        ...errorResponses(404, 416),
      },
    },
    handler: async (request, reply) => {
      const key = request.params['*'];
      const file = isSafeKey(key) ? await files.findReadyByKey(key) : null;
      if (!file || !file.sha256) throw notFound('No such file.');
      const etag = `"${file.sha256}"`;
      const lastModified = file.readyAt ?? file.createdAt;
      const validators = { etag, 'last-modified': lastModified.toUTCString(), 'cache-control': IMMUTABLE, 'accept-ranges': 'bytes' };
      const header = (name: string) => {
        const value = request.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      };
      // The body is bytes (a stream), not JSON: the response schemas above only document it.
      const bytes = reply as unknown as FastifyReply;
      if (notModified({ ifNoneMatch: header('if-none-match'), ifModifiedSince: header('if-modified-since') }, etag, lastModified)) {
        return bytes.code(304).headers(validators).send();
      }
      const decision = rangeStillValid(header('if-range'), etag, lastModified) ? parseRange(header('range'), file.size) : ({ kind: 'full' } as const);
      if (decision.kind === 'unsatisfiable') {
        throw new AppError(
          416,
          'RANGE_NOT_SATISFIABLE',
          `The requested range is outside the file, which has ${file.size} bytes.`,
          { size: file.size },
          {
            'content-range': `bytes */${file.size}`,
            'accept-ranges': 'bytes',
          },
        );
      }
      const range = decision.kind === 'partial' ? { start: decision.start, end: decision.end } : undefined;
      const body = request.method === 'HEAD' ? null : await files.openStream(file, range);
      bytes.headers({
        ...validators,
        'content-type': file.contentType,
        'content-length': String(range ? range.end - range.start + 1 : file.size),
        'x-content-type-options': 'nosniff',
        'cross-origin-resource-policy': 'cross-origin',
        // Files are served from the API's own origin: a stored SVG (vector images) must never run a script there.
        ...(file.contentType === 'image/svg+xml' ? { 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox" } : {}),
        ...(file.filename ? { 'content-disposition': contentDisposition(file.filename) } : {}),
      });
      if (range) bytes.code(206).header('content-range', `bytes ${range.start}-${range.end}/${file.size}`);
      return bytes.send(body ?? undefined);
    },
  });
};
