import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

// ajv-formats ships CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

/**
 * Two validators: query strings, params and headers arrive as text and are coerced to the schema's types;
 * JSON bodies are not coerced, so `{ "count": "3" }` is a type error rather than silently accepted.
 * Neither strips unknown keys: a schema that forbids them makes the request fail with a clear message.
 */
export function registerValidation(app: FastifyInstance): void {
  const base = { removeAdditional: false, useDefaults: true, allErrors: true, strict: false } as const;
  const bodyAjv = addFormats(new Ajv({ ...base, coerceTypes: false }));
  const textAjv = addFormats(new Ajv({ ...base, coerceTypes: 'array' }));
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema));

  // JSON is the one body format; anything else gets a clear 400 instead of being read as a string.
  app.removeContentTypeParser('text/plain');

  // A request without a body is validated as `{}`, so it reports the missing fields by name
  // (and routes whose fields are all optional, like refresh with the cookie, accept it).
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
  });
}
