import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import type { ValidateFunction } from 'ajv';

// ajv-formats ships CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

/** A validator compiled on its first request, or by `compileAll` (tests compile every route's this way). */
interface LazyValidators {
  compileAll(): number;
}
const lazyValidators = new WeakMap<FastifyInstance, LazyValidators>();

/**
 * Compiles every route's validators now instead of on each one's first request, so a schema Ajv cannot compile fails
 * here (a test builds the whole app and calls this). Answers how many it compiled.
 */
export function compileAllValidators(app: FastifyInstance): number {
  const validators = lazyValidators.get(app);
  if (!validators) throw new Error('registerValidation(app) was not called on this instance');
  return validators.compileAll();
}

/**
 * Two validators: query strings, params and headers arrive as text and are coerced to the schema's types;
 * JSON bodies are not coerced, so `{ "count": "3" }` is a type error rather than silently accepted.
 * Neither strips unknown keys: a schema that forbids them makes the request fail with a clear message.
 */
export function registerValidation(app: FastifyInstance): void {
  const base = { removeAdditional: false, useDefaults: true, allErrors: true, strict: false } as const;
  const bodyAjv = addFormats(new Ajv({ ...base, coerceTypes: false }));
  const textAjv = addFormats(new Ajv({ ...base, coerceTypes: 'array' }));
  // Compiled on first use: ~700 Ajv functions for ~300 routes hold ~12 MB of heap, most of them for routes an
  // instance may never serve (admin, payments' callbacks), and compiling them all made start-up garbage too.
  const pending = new Set<() => ValidateFunction>();
  app.setValidatorCompiler(({ schema, httpPart }) => {
    let compiled: ValidateFunction | null = null;
    const compile = () => {
      if (compiled) return compiled;
      compiled = (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);
      pending.delete(compile);
      return compiled;
    };
    pending.add(compile);
    // Fastify reads `errors` off the function it was given after a failed call.
    const validate = (data: unknown) => {
      const run = compile();
      const valid = run(data);
      validate.errors = run.errors;
      return valid;
    };
    validate.errors = null as ValidateFunction['errors'];
    return validate;
  });
  lazyValidators.set(app, {
    compileAll: () => {
      const all = [...pending];
      for (const compile of all) compile();
      return all.length;
    },
  });

  // JSON is the one body format; anything else gets a clear 400 instead of being read as a string.
  app.removeContentTypeParser('text/plain');

  // A request without a body is validated as `{}`, so it reports the missing fields by name
  // (and routes whose fields are all optional, like refresh with the cookie, accept it).
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
  });
}
