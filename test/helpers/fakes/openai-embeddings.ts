import type { MediaFake, MediaFakeRequest } from '../fake-media-upstreams.js';
import { sendJson, startFakeServer } from './server.js';

/**
 * A local OpenAI-compatible `POST /embeddings`, in one of two flavours, checking what it receives:
 * - `openai` (https://api.openai.com/v1): text-embedding-3-small (1536), -3-large (3072), ada-002 (1536, no
 *   `dimensions`); at most 2048 inputs; answers `{ object: 'list', data, model, usage }`; an invalid key is OpenAI's
 *   401 `invalid_api_key`; a model the project may not use is its 403 naming the model.
 * - `google` (https://generativelanguage.googleapis.com/v1beta/openai): gemini-embedding-001 (3072, `dimensions`
 *   truncates without normalising, as Google documents for outputDimensionality); at most 100 inputs per request
 *   (Google's "at most 100 requests can be in one batch" otherwise); no `usage` in the answer; an invalid key is
 *   Google's 400 INVALID_ARGUMENT / API_KEY_INVALID, sent as a one-element array as this endpoint does.
 * Keys go in `Authorization: Bearer`; a key is valid when it starts with `good` (or `AIza` for Google). Inputs must be
 * non-empty strings. Vectors are deterministic per text. `prompt_tokens` counts words, so a test can tell the
 * provider's count from the gateway's own.
 */

export type EmbeddingsFlavour = 'openai' | 'google';

const MODELS: Record<EmbeddingsFlavour, Record<string, { dimensions: number; shortens: boolean }>> = {
  openai: {
    'text-embedding-3-small': { dimensions: 1536, shortens: true },
    'text-embedding-3-large': { dimensions: 3072, shortens: true },
    'text-embedding-ada-002': { dimensions: 1536, shortens: false },
  },
  google: { 'gemini-embedding-001': { dimensions: 3072, shortens: true } },
};
const MAX_INPUTS: Record<EmbeddingsFlavour, number> = { openai: 2048, google: 100 };
const PREFIX: Record<EmbeddingsFlavour, string> = { openai: '/v1', google: '/v1beta/openai' };

export const OPENAI_EMBEDDING_ERRORS = {
  badKey: (key: string) => ({
    error: {
      message: `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_api_key',
    },
  }),
  noModelAccess: (model: string) => ({
    error: { message: `Project \`proj_fake\` does not have access to model \`${model}\``, type: 'invalid_request_error', param: null, code: 'model_not_found' },
  }),
  rateLimit: (model: string) => ({
    error: {
      message: `Rate limit reached for ${model} in organization org-fake on requests per min (RPM): Limit 3000, Used 3000, Requested 1.`,
      type: 'requests',
      param: null,
      code: 'rate_limit_exceeded',
    },
  }),
  server: { error: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', param: null, code: null } },
  invalid: (message: string, param: string | null = null) => ({ error: { message, type: 'invalid_request_error', param, code: null } }),
};

const googleError = (code: number, status: string, message: string, reason?: string) => [
  {
    error: {
      code,
      message,
      status,
      ...(reason
        ? {
            details: [
              {
                '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
                reason,
                domain: 'googleapis.com',
                metadata: { service: 'generativelanguage.googleapis.com' },
              },
            ],
          }
        : {}),
    },
  },
];

/** A unit vector of `dimensions` components, the same for the same text. */
export function fakeVector(text: string, dimensions: number): number[] {
  let seed = 2166136261;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 16777619) >>> 0;
  const values = Array.from({ length: dimensions }, () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 31 - 1;
  });
  const norm = Math.hypot(...values);
  return values.map((value) => value / norm);
}

export const wordCount = (texts: string[]) => texts.reduce((sum, text) => sum + (text.match(/\S+/g)?.length ?? 0), 0);

export interface EmbeddingsFake extends MediaFake {
  flavour: EmbeddingsFlavour;
  /** The embeddings calls received (not the key checks). */
  calls(): MediaFakeRequest[];
}

export async function startFakeEmbeddings(flavour: EmbeddingsFlavour): Promise<EmbeddingsFake> {
  const prefix = PREFIX[flavour];
  const validKey = (key: string) => key.startsWith('good') || (flavour === 'google' && key.startsWith('AIza'));
  const fake = await startFakeServer((request, res) => {
    const key = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1] ?? '';
    if (!validKey(key)) {
      if (flavour === 'google')
        return sendJson(res, 400, googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID'));
      return sendJson(res, 401, OPENAI_EMBEDDING_ERRORS.badKey(key || 'none'));
    }
    if (request.method === 'GET' && request.path === `${prefix}/models`)
      return sendJson(res, 200, { object: 'list', data: Object.keys(MODELS[flavour]).map((id) => ({ id, object: 'model' })) });
    if (request.method !== 'POST' || request.path !== `${prefix}/embeddings`)
      return sendJson(res, 404, OPENAI_EMBEDDING_ERRORS.invalid(`Unknown request URL: ${request.method} ${request.path}.`));

    const body = request.body as { model?: unknown; input?: unknown; dimensions?: unknown; encoding_format?: unknown };
    const invalid = (message: string, param: string) =>
      flavour === 'google'
        ? sendJson(res, 400, googleError(400, 'INVALID_ARGUMENT', message))
        : sendJson(res, 400, OPENAI_EMBEDDING_ERRORS.invalid(message, param));
    const model = typeof body.model === 'string' ? MODELS[flavour][body.model] : undefined;
    if (!model) {
      return flavour === 'google'
        ? sendJson(
            res,
            404,
            googleError(404, 'NOT_FOUND', `models/${String(body.model)} is not found for API version v1beta, or is not supported for embedContent.`),
          )
        : sendJson(res, 404, {
            error: {
              message: `The model \`${String(body.model)}\` does not exist or you do not have access to it.`,
              type: 'invalid_request_error',
              param: null,
              code: 'model_not_found',
            },
          });
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || input.length === 0 || input.some((text) => typeof text !== 'string' || text.length === 0))
      return invalid("'$.input' is invalid.", 'input');
    if (input.length > MAX_INPUTS[flavour]) {
      return flavour === 'google'
        ? invalid('* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch\n', 'input')
        : invalid(`'$.input' is too long: ${input.length} > 2048.`, 'input');
    }
    if (body.encoding_format !== undefined && body.encoding_format !== 'float' && body.encoding_format !== 'base64')
      return invalid("'encoding_format' must be float or base64.", 'encoding_format');
    let dimensions = model.dimensions;
    if (body.dimensions !== undefined) {
      if (!model.shortens) return invalid('This model does not support specifying dimensions.', 'dimensions');
      if (typeof body.dimensions !== 'number' || body.dimensions < 1 || body.dimensions > model.dimensions)
        return invalid(`dimensions must be between 1 and ${model.dimensions}.`, 'dimensions');
      dimensions = body.dimensions;
    }
    const vectors = (input as string[]).map((text) => {
      const full = fakeVector(text, model.dimensions);
      if (dimensions === model.dimensions) return full;
      const head = full.slice(0, dimensions);
      if (flavour === 'google') return head;
      const norm = Math.hypot(...head);
      return head.map((value) => value / norm);
    });
    const embedding = (vector: number[]) => {
      if (body.encoding_format !== 'base64') return vector;
      const bytes = Buffer.alloc(vector.length * 4);
      vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
      return bytes.toString('base64');
    };
    const tokens = wordCount(input as string[]);
    return sendJson(res, 200, {
      object: 'list',
      data: vectors.map((vector, index) => ({ object: 'embedding', index, embedding: embedding(vector) })),
      model: body.model,
      ...(flavour === 'openai' ? { usage: { prompt_tokens: tokens, total_tokens: tokens } } : {}),
    });
  });
  return {
    ...fake,
    baseUrl: `${fake.origin}${prefix}`,
    flavour,
    calls: () => fake.requests.filter((request) => request.method === 'POST'),
  };
}

/** The Google flavour's refusal bodies, for tests that script them through `decide`. */
export const GOOGLE_EMBEDDING_ERRORS = {
  quota: googleError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.'),
  modelDenied: (model: string) =>
    googleError(403, 'PERMISSION_DENIED', `Your project does not have access to model ${model}. Request access or choose another model.`),
  unavailable: googleError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'),
};
