import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isConnectionLost } from '../db/connection-lost.js';
import { AppError } from './errors.js';
import { drainOversizedBody } from './oversized-body.js';
import { describeValidationErrors } from './validation-messages.js';

interface Envelope {
  error: { code: string; message: string; details: unknown };
}

const envelope = (code: string, message: string, details: unknown = null): Envelope => ({ error: { code, message, details } });

/** Maps Fastify's own error codes (parsing, content type, size) to messages a person can act on. */
const FASTIFY_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'BAD_REQUEST', message: 'The request body is not valid JSON.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'BAD_REQUEST',
    message: 'The request body is empty but Content-Type is application/json. Send a JSON body or no Content-Type.',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 400,
    code: 'BAD_REQUEST',
    message: 'Unsupported Content-Type. Send the body as application/json.',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'BAD_REQUEST', message: 'The Content-Length header does not match the body.' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'The request body is too large.' },
};

/** Errors Fastify raises before routing (bad URL encoding, over-long path parameters), in the same envelope. */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  reply
    .code(tooLong ? 414 : 400)
    .send(envelope(tooLong ? 'URI_TOO_LONG' : 'BAD_REQUEST', tooLong ? 'A path parameter is too long.' : 'The URL is not valid: check its percent-encoding.'));
}

/** Any error a route can end with, reduced to what an error body needs (5xx are logged here). */
export interface DescribedError {
  status: number;
  code: string;
  message: string;
  details: unknown;
  headers: Record<string, string>;
}

/**
 * A request that lost a connection it needed (its database's, mostly; `connection-lost.ts` also takes a socket's reset
 * or refusal): retried a moment later it usually succeeds, on another connection.
 */
const RETRY_AFTER_CONNECTION_LOST_SECONDS = 2;
const connectionLost = (requestId: string) => ({
  status: 503,
  code: 'SERVICE_UNAVAILABLE',
  message: `The service lost its connection to its database (or another service it needs) while answering. Retry in ${RETRY_AFTER_CONNECTION_LOST_SECONDS} seconds; a metered call retried with the same Idempotency-Key is never charged twice.`,
  details: { retryable: true, requestId },
});

export function describeError(error: FastifyError | AppError, request: FastifyRequest): DescribedError {
  const plain = (status: number, code: string, message: string, details: unknown = null): DescribedError => ({ status, code, message, details, headers: {} });
  if (error instanceof AppError) {
    if (error.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    return { status: error.statusCode, code: error.code, message: error.message, details: error.details, headers: error.headers };
  }
  if (error.validation) {
    const { message, details } = describeValidationErrors(error.validation, error.validationContext);
    return plain(400, 'BAD_REQUEST', message, details);
  }
  const known = error.code ? FASTIFY_ERRORS[error.code] : undefined;
  if (known) return plain(known.status, known.code, known.message);
  if (error.statusCode === 429) return plain(429, 'RATE_LIMITED', 'Too many requests. Slow down and try again shortly.');
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return plain(error.statusCode, 'BAD_REQUEST', error.message);
  if (isConnectionLost(error)) {
    request.log.warn({ err: error }, 'a connection was lost during the request');
    return { ...connectionLost(request.id), headers: { 'retry-after': String(RETRY_AFTER_CONNECTION_LOST_SECONDS) } };
  }
  request.log.error({ err: error }, 'unhandled error');
  return plain(500, 'INTERNAL', 'Something went wrong on our side. Try again; if it keeps happening, contact support.', { requestId: request.id });
}

const spec = (e: DescribedError): unknown => envelope(e.code, e.message, e.details);

/**
 * The error handler and the 404 of `app` (the whole service, or an encapsulated prefix that answers errors in
 * another shape, like the OpenAI-compatible surface); `render` turns a described error into the body, and `statusOf`
 * may answer it with the status that surface's vendor uses for the same condition.
 */
export function registerErrorHandling(
  app: FastifyInstance,
  render: (error: DescribedError) => unknown = spec,
  statusOf: (error: DescribedError) => number = (e) => e.status,
): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if ('code' in error && error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') drainOversizedBody(request, reply);
    const described = describeError(error, request);
    const status = statusOf(described);
    return reply
      .code(status)
      .headers(described.headers)
      .send(render({ ...described, status }));
  });

  app.setNotFoundHandler((request, reply) => {
    reply
      .code(404)
      .send(render({ status: 404, code: 'NOT_FOUND', message: `No route for ${request.method} ${request.url.split('?')[0]}.`, details: null, headers: {} }));
  });
}
