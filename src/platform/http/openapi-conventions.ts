/**
 * House conventions applied to the generated OpenAPI document, so every route gets them without repeating them:
 * operation ids, explicit security, the error responses every route can give, response descriptions,
 * server-sent events and binary bodies.
 */

/** Route-level hints (`config.openapi`) for what the JSON schemas cannot say. */
export interface RouteOpenApiHints {
  /** `always`: the success answer is a text/event-stream; `optional`: JSON, or events when the body asks to stream. */
  stream?: 'always' | 'optional';
  /** The body is the raw bytes of a file, in its own content type. */
  binaryBody?: boolean;
  operationId?: string;
}

const STREAM_HINT = 'x-sf-stream';
const BINARY_HINT = 'x-sf-binary-body';
const OPERATION_ID_HINT = 'x-sf-operation-id';
const WILDCARD_PARAM = 'path';

type Json = Record<string, unknown>;
interface RouteLike {
  url: string;
  config?: unknown;
}

const pascal = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
const words = (segment: string) =>
  segment
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map(pascal)
    .join('');

/** `GET /v1/jobs/{id}/stream` → `getJobsByIdStream`: stable, readable, unique per method and path. */
export function operationIdFor(method: string, url: string): string {
  const parts = url
    .split('/')
    .filter((s) => s && s !== 'v1')
    .map((s) => {
      const param = /^\{(.+)\}$/.exec(s) ?? /^:(.+)$/.exec(s);
      return param ? `By${words(param[1]!)}` : words(s);
    });
  return method.toLowerCase() + (parts.join('') || 'Root');
}

const hintsOf = (route: RouteLike): RouteOpenApiHints => (route.config as { openapi?: RouteOpenApiHints } | undefined)?.openapi ?? {};

/**
 * Per-route part (@fastify/swagger `transform`): names the wildcard parameter, defaults `security` to `[]` (public),
 * adds an operation id, and carries the route's hints into the operation for `applyDocumentConventions`.
 */
export function transformRoute({ schema, url, route }: { schema: unknown; url: string; route: RouteLike }): { schema: Json; url: string } {
  const out: Json = { ...((schema as Json | undefined) ?? {}) };
  const hints = hintsOf(route);
  let documentedUrl = url;
  if (url.endsWith('/*')) {
    documentedUrl = `${url.slice(0, -2)}/{${WILDCARD_PARAM}}`;
    const params = out.params as { properties?: Json; required?: string[] } | undefined;
    if (params?.properties?.['*']) {
      const { '*': wildcard, ...rest } = params.properties;
      out.params = {
        ...params,
        properties: { ...rest, [WILDCARD_PARAM]: wildcard },
        required: (params.required ?? []).map((n) => (n === '*' ? WILDCARD_PARAM : n)),
      };
    }
  }
  out.security ??= [];
  if (hints.operationId) out[OPERATION_ID_HINT] = hints.operationId;
  if (hints.stream) out[STREAM_HINT] = hints.stream;
  if (hints.binaryBody) out[BINARY_HINT] = true;
  return { schema: out, url: documentedUrl };
}

const ERROR_DESCRIPTIONS: Record<string, string> = {
  '400': 'The request is invalid; `details` lists each problem',
  '401': 'No valid credential (missing, expired or revoked token)',
  '402': 'Payment required',
  '403': 'The credential is valid but not allowed to do this',
  '404': 'Not found (or not yours)',
  '409': 'Conflicts with the current state (e.g. an Idempotency-Key still in flight)',
  '410': 'Gone',
  '413': 'Too large',
  '414': 'The URL or a path parameter is too long',
  '416': 'The requested range cannot be served',
  '422': 'Understood but cannot be processed',
  '429': 'Too many requests; `Retry-After` says how many seconds to wait',
  '500': 'Unexpected server error (the request id in `x-request-id` helps support find it)',
  '502': 'The upstream provider failed',
  '503': 'Temporarily unavailable',
  '504': 'The upstream provider timed out',
};
const SUCCESS_WORDS: Record<string, string> = { '200': 'OK', '201': 'Created', '202': 'Accepted', '204': 'No content', '206': 'Partial content' };
const GENERIC_DESCRIPTIONS = new Set(['Default Response', 'The error envelope returned by every error.']);
const errorResponse = (status: string) => ({
  description: ERROR_DESCRIPTIONS[status] ?? 'Error',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
  ...(status === '429' ? { headers: { 'Retry-After': { description: 'Seconds until the limit resets', schema: { type: 'integer' } } } } : {}),
});
const EVENT_STREAM = { 'text/event-stream': { schema: { type: 'string', description: 'Server-sent events (`data: <JSON>` lines)' } } };
const BINARY_BODY = {
  required: true,
  description: 'The file bytes, sent with the content type declared when the upload was started',
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } }, '*/*': { schema: { type: 'string', format: 'binary' } } },
};

/** Whole-document part (@fastify/swagger `transformObject`): responses every operation can give, hints, servers. */
export function applyDocumentConventions(document: Json, servers: Array<{ url: string; description: string }>): Json {
  const paths = (document.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, shared] of Object.entries(operations)) {
      // Per method, not per route: a route serving GET and HEAD shares one operation object between them.
      const { [OPERATION_ID_HINT]: hinted, ...operation } = shared;
      operation.operationId = hinted ?? operationIdFor(method, path);
      completeOperation(operation);
      operations[method] = operation;
    }
  }
  return { ...document, servers };
}

function completeOperation(operation: Json): void {
  const responses = (operation.responses ??= {}) as Record<string, Json>;
  const summary = typeof operation.summary === 'string' ? operation.summary : '';
  for (const [status, response] of Object.entries(responses)) {
    if (!GENERIC_DESCRIPTIONS.has(response.description as string)) continue;
    if (status.startsWith('2')) response.description = summary ? `${SUCCESS_WORDS[status] ?? 'Success'}: ${summary}` : (SUCCESS_WORDS[status] ?? 'Success');
    else response.description = ERROR_DESCRIPTIONS[status] ?? 'Error';
  }

  const security = (operation.security ?? []) as Json[];
  const required = security.length > 0 && security.every((s) => Object.keys(s).length > 0);
  const takesInput = Boolean(operation.requestBody) || ((operation.parameters as unknown[] | undefined)?.length ?? 0) > 0;
  const always = ['429', '500', ...(takesInput ? ['400'] : []), ...(required ? ['401'] : [])];
  for (const status of always) responses[status] ??= errorResponse(status);

  const stream = operation[STREAM_HINT] as RouteOpenApiHints['stream'];
  if (stream) {
    const success = Object.keys(responses).find((s) => s.startsWith('2'))!;
    const ok = responses[success]!;
    const content = (ok.content ?? {}) as Json;
    ok.content = stream === 'always' ? EVENT_STREAM : { ...content, ...EVENT_STREAM };
    if (stream === 'always' && typeof ok.description === 'string') ok.description = `Server-sent events: ${summary}`;
    delete operation[STREAM_HINT];
  }
  if (operation[BINARY_HINT]) {
    operation.requestBody = BINARY_BODY;
    delete operation[BINARY_HINT];
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    openapi?: RouteOpenApiHints;
  }
}
