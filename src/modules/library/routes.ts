import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import {
  GenerationPatch,
  GenerationSchema,
  GenerationsPage,
  GenerationsQuery,
  LIBRARY_LIMITS,
  LibraryIdParams,
  PromptTemplateCreate,
  PromptTemplatePatch,
  PromptTemplateSchema,
  PromptTemplatesQuery,
} from './schemas.js';
import type { LibraryService } from './service.js';

/** `/v1/library/*`: the caller's generations and prompt templates. */
export const libraryRoutes: FastifyPluginAsyncTypebox<{
  library: LibraryService;
  /** Refuses a caller whose account is no longer active (the auth service's check). */
  ensureActive: (userId: string) => Promise<unknown>;
}> = async (app, { library, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal) await ensureActive(request.principal.userId);
  });
  const tags = ['library'];
  const config = { auth: 'required' as const };

  app.get(
    '/v1/library/generations',
    {
      config,
      schema: {
        tags,
        summary: 'Your generations, newest first (TEXT only with kind=TEXT)',
        querystring: GenerationsQuery,
        response: { 200: GenerationsPage, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const { kind, favoritesOnly = false, search, tag, limit = LIBRARY_LIMITS.generationsDefault, cursor } = request.query;
      const text = search?.trim();
      return library.generations.list(principalOf(request).userId, {
        kind,
        favoritesOnly,
        search: text || undefined,
        tag: tag?.trim() || undefined,
        limit,
        cursor,
      });
    },
  );

  app.get(
    '/v1/library/generations/:id',
    { config, schema: { tags, summary: 'One of your generations', params: LibraryIdParams, response: { 200: GenerationSchema, ...errorResponses(401, 404) } } },
    async (request) => library.generations.get(principalOf(request).userId, request.params.id),
  );

  app.patch(
    '/v1/library/generations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Mark one of your generations favourite, or replace its tags',
        params: LibraryIdParams,
        body: GenerationPatch,
        response: { 200: GenerationSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => library.generations.update(principalOf(request).userId, request.params.id, request.body),
  );

  app.get(
    '/v1/library/prompts',
    {
      config,
      schema: {
        tags,
        summary: 'Your prompt templates and the system templates, newest-updated first',
        querystring: PromptTemplatesQuery,
        response: { 200: Type.Array(PromptTemplateSchema), ...errorResponses(400, 401) },
      },
    },
    async (request) => library.prompts.list(principalOf(request).userId, request.query),
  );

  app.post(
    '/v1/library/prompts',
    {
      config,
      schema: { tags, summary: 'Save a prompt template', body: PromptTemplateCreate, response: { 201: PromptTemplateSchema, ...errorResponses(400, 401) } },
    },
    async (request, reply) => reply.code(201).send(await library.prompts.create(principalOf(request).userId, request.body)),
  );

  app.patch(
    '/v1/library/prompts/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Change one of your prompt templates (system templates cannot be changed)',
        params: LibraryIdParams,
        body: PromptTemplatePatch,
        response: { 200: PromptTemplateSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => library.prompts.update(principalOf(request).userId, request.params.id, request.body),
  );

  app.post(
    '/v1/library/prompts/:id/use',
    {
      config,
      schema: {
        tags,
        summary: 'Count one use of a template (yours or a system one)',
        params: LibraryIdParams,
        response: { 200: Ok, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await library.prompts.use(principalOf(request).userId, request.params.id);
      return { ok: true as const };
    },
  );
};
