import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { registerErrorHandling } from '../../platform/http/error-handler.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import { openSse } from '../../platform/http/sse.js';
import { IdempotencyHeaders } from '../gateway/index.js';
import { ignoredFields, toGeminiError, type GenerateContentRequest } from './gemini.format.js';
import { openJsonArrayStream } from './gemini.json-stream.js';
import {
  CountTokensResponse,
  GEMINI_BODY_LIMIT_BYTES,
  GeminiModel,
  GeminiModelList,
  GenerateContentResponse,
  ModelCallBody,
  ModelCallQuery,
  ModelPathParams,
  geminiErrors,
} from './gemini.schemas.js';
import type { CompatService } from './service.js';

const METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'] as const;
type ModelMethod = (typeof METHODS)[number];

/**
 * `models/<model>:<method>` split at its last colon. Model ids hold a slash (`openai/gpt-4o-mini`), which a path
 * parameter cannot, hence the wildcard; a client may also send that slash encoded, or repeat the `models/` prefix.
 */
function modelPath(wildcard: string): { model: string; method: ModelMethod | null } {
  const path = safelyDecoded(wildcard).replace(/^models\//, '');
  const colon = path.lastIndexOf(':');
  const method = METHODS.find((name) => colon >= 0 && path.slice(colon + 1) === name);
  return method ? { model: path.slice(0, colon), method } : { model: path, method: null };
}

function safelyDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const IGNORED = 'x-storefront-ignored';
/** The fields this surface left out, after those the gateway reports (it may name its own in the same header). */
function ignoredHeader(ours: string[], gateways: string | undefined): Record<string, string> {
  const all = [...(gateways ? gateways.split(', ') : []), ...ours.filter((field) => !gateways?.split(', ').includes(field))];
  return all.length ? { [IGNORED]: all.join(', ') } : {};
}

const auth = { auth: 'required', scope: 'ai:text', apiKeyHeader: 'x-goog-api-key', apiKeyQuery: 'key' } as const;
const ModelQuery = Type.Object({ key: ModelCallQuery.properties.key });

/**
 * `/gemini/v1beta/*` (register with that prefix): Google's Gemini API for `@google/genai` and Gemini CLI pointed here
 * with `GOOGLE_GEMINI_BASE_URL`. The API key is accepted as `x-goog-api-key`, `?key=` or `Authorization: Bearer`.
 */
export const geminiRoutes: FastifyPluginAsyncTypebox<{ compat: CompatService }> = async (app, { compat }) => {
  registerErrorHandling(app, toGeminiError);

  app.get(
    '/models',
    {
      config: auth,
      schema: {
        tags: ['gemini'],
        summary: "The caller's models in Google's list shape (name: models/<model id>)",
        querystring: ModelQuery,
        response: { 200: GeminiModelList, ...geminiErrors(401, 403) },
      },
    },
    async (request) => compat.geminiModels(principalOf(request)),
  );

  app.get(
    '/models/*',
    {
      config: auth,
      schema: {
        tags: ['gemini'],
        summary: "One model in Google's shape; the path is models/<model id>",
        params: ModelPathParams,
        querystring: ModelQuery,
        response: { 200: GeminiModel, ...geminiErrors(401, 403, 404) },
      },
    },
    async (request) => compat.geminiModel(principalOf(request), modelPath(request.params['*']).model),
  );

  app.post(
    '/models/*',
    {
      bodyLimit: GEMINI_BODY_LIMIT_BYTES,
      config: { ...auth, openapi: { stream: 'optional' } },
      schema: {
        tags: ['gemini'],
        summary:
          "models/<model id>:generateContent, :streamGenerateContent (Server-Sent Events with ?alt=sse, else one JSON array of chunks written as they come) or :countTokens in Google's shapes, metered like POST /v1/ai/text (countTokens is free)",
        params: ModelPathParams,
        querystring: ModelCallQuery,
        body: ModelCallBody,
        headers: IdempotencyHeaders,
        response: {
          200: Type.Union([
            GenerateContentResponse,
            Type.Array(GenerateContentResponse, { description: 'streamGenerateContent without alt=sse: the chunks, written as they come' }),
            CountTokensResponse,
          ]),
          ...geminiErrors(400, 401, 403, 404, 409, 413, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { model, method } = modelPath(request.params['*']);
      if (!method) throw notFound(`No Gemini method in "${request.params['*']}"; call models/<model>:generateContent, :streamGenerateContent or :countTokens.`);
      const principal = principalOf(request);
      const body = request.body;
      if (method === 'countTokens') {
        const counted = body.generateContentRequest ?? body;
        return compat.countGeminiTokens(principal, model, { ...counted, contents: counted.contents ?? [] });
      }
      if (!body.contents?.length)
        throw badRequest('contents is required: the conversation, at least one content.', [{ field: 'contents', message: 'is required' }]);
      const generateRequest = body as GenerateContentRequest;
      const ignored = ignoredFields(generateRequest);
      const idempotencyKey = request.headers['idempotency-key'];
      if (method === 'streamGenerateContent') {
        // Google's two forms: Server-Sent Events (`alt=sse`, what @google/genai asks for) or, by default, one JSON array.
        const alt = request.query.alt ?? 'json';
        if (alt !== 'sse' && alt !== 'json')
          throw badRequest(`alt is "${alt}"; streamGenerateContent answers with alt=sse (Server-Sent Events) or alt=json (one JSON array, the default).`, [
            { field: 'alt', message: 'must be sse or json' },
          ]);
        const openStream = alt === 'sse' ? openSse : openJsonArrayStream;
        const open = (headers: Record<string, string> = {}) =>
          openStream(request, reply, { headers: { ...headers, ...ignoredHeader(ignored, headers[IGNORED]) } });
        await compat.streamGenerateContent(principal, model, generateRequest, { idempotencyKey, timing: request.timing, open });
        return reply;
      }
      const { response, requestId, replayed, gatewayIgnored } = await compat.generateContent(principal, model, generateRequest, {
        idempotencyKey,
        timing: request.timing,
      });
      if (replayed) reply.header('idempotent-replayed', 'true');
      reply.header('x-ai-request-id', requestId).headers(ignoredHeader(ignored, gatewayIgnored.join(', ')));
      return response;
    },
  );
};
