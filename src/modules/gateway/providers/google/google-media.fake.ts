import type { ServerResponse } from 'node:http';
import { solidPng, type MediaFake, type MediaFakeRequest } from '../../../../../test/helpers/fake-media-upstreams.js';
import { fakeClip, sendBytes, sendJson, startFakeServer } from '../../../../../test/helpers/fakes/server.js';

/**
 * A local Gemini API (generativelanguage.googleapis.com) for the media models, checking what it receives:
 * - `POST /v1beta/models/{gemini image model}:generateContent` (text and `inline_data` parts, `imageConfig`; the
 *   Gemini 3 models also take `imageSize`), answering one image part, or Google's refusals;
 * - `POST /v1beta/models/{veo}:predictLongRunning` -> `{ name }`, `GET /v1beta/{name}` walking a script of states,
 *   `GET /v1beta/files/{id}:download?alt=media` -> 302 to a signed link that needs no key;
 * - `GET /v1beta/models` (the key check and the catalog check): `models[]` pages of `pageSize` (50 by default, at most
 *   1000) linked by `nextPageToken`, and the OpenAI-compatible `GET /v1beta/openai/models` the text adapter checks with.
 * Imagen 4 is gone, as on the real API since 2026-08-17 (https://ai.google.dev/gemini-api/docs/deprecations): it is
 * not listed, and any call to an `imagen-4.0-*` id answers Google's 404 NOT_FOUND.
 * Keys go in `x-goog-api-key` (or `?key=`); a key is valid when it starts with `AIza` or `good`. Google's own errors:
 * a missing key is 403 PERMISSION_DENIED, a wrong one 400 INVALID_ARGUMENT with reason API_KEY_INVALID.
 */

export const GOOGLE_ERRORS = {
  badKey: {
    error: {
      code: 400,
      message: 'API key not valid. Please pass a valid API key.',
      status: 'INVALID_ARGUMENT',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        },
      ],
    },
  },
  noKey: {
    error: {
      code: 403,
      message:
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      status: 'PERMISSION_DENIED',
    },
  },
  modelDenied: (model: string) => ({
    error: { code: 403, message: `Your project does not have access to model ${model}. Request access or choose another model.`, status: 'PERMISSION_DENIED' },
  }),
  quota: { error: { code: 429, message: 'You exceeded your current quota, please check your plan and billing details.', status: 'RESOURCE_EXHAUSTED' } },
  internal: {
    error: {
      code: 500,
      message: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
      status: 'INTERNAL',
    },
  },
  unavailable: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } },
  invalid: (message: string) => ({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } }),
  notFound: (model: string, method: string) => ({
    error: {
      code: 404,
      message: `models/${model} is not found for API version v1beta, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`,
      status: 'NOT_FOUND',
    },
  }),
};

const GEMINI_SIZES: Record<string, [number, number]> = {
  '1:1': [1024, 1024],
  '2:3': [832, 1248],
  '3:2': [1248, 832],
  '3:4': [864, 1184],
  '4:3': [1184, 864],
  '4:5': [896, 1152],
  '5:4': [1152, 896],
  '9:16': [768, 1344],
  '16:9': [1344, 768],
  '21:9': [1536, 672],
};
const GEMINI_IMAGE_MODELS = ['gemini-2.5-flash-image', 'gemini-3.1-flash-image', 'gemini-3-pro-image'];
/** The Gemini 3 image models' `imageSize` values (2.5 Flash Image has one size). */
const IMAGE_SIZES: Record<string, string[]> = { 'gemini-3.1-flash-image': ['512', '1K', '2K', '4K'], 'gemini-3-pro-image': ['1K', '2K', '4K'] };
const VEO_DURATIONS: Record<string, number[]> = {
  'veo-3.0-generate-001': [8],
  'veo-3.0-fast-generate-001': [8],
  'veo-2.0-generate-001': [5, 6, 7, 8],
  'veo-3.1-generate-preview': [4, 6, 8],
};
/** The text and embedding models the key is served beside the media ones (what the native list names). */
const TEXT_MODELS = ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.5-flash-lite', 'gemini-2.0-flash', 'gemini-embedding-001'];
/** Everything the fake serves, as `GET /v1beta/models` lists it. */
export const GOOGLE_LISTED_MODELS = [...TEXT_MODELS, ...GEMINI_IMAGE_MODELS, ...Object.keys(VEO_DURATIONS)];
const PERSON_GENERATION = ['dont_allow', 'allow_adult', 'allow_all'];

/** What a Veo operation reports at each poll (the last state repeats). */
export type VeoStep = 'running' | 'succeeded' | 'failed' | 'filtered' | 'inline';
/** How the Gemini image model answers the next calls. */
export type GeminiOutcome = 'image' | 'blocked' | 'image_safety' | 'text_only';

interface Operation {
  model: string;
  steps: VeoStep[];
  polls: number;
}

export interface GoogleFake extends MediaFake {
  /** The OpenAI-compatible base URL (what GOOGLE_BASE_URL usually holds); `baseUrl` is the native root. */
  openAiBaseUrl: string;
  operations: Map<string, Operation>;
  /** States successive polls of operations submitted from now on report. */
  setVeoScript(steps: VeoStep[]): void;
  /** The ids `GET /v1beta/models` lists from now on (default `GOOGLE_LISTED_MODELS`). */
  setListedModels(ids: string[]): void;
  setGeminiOutcome(outcome: GeminiOutcome): void;
  /** Requests that reached the signed video link, and whether any of them carried the API key. */
  signedDownloads(): { count: number; withKey: number };
}

const keyOf = (request: MediaFakeRequest) => {
  const header = request.headers['x-goog-api-key'];
  return typeof header === 'string' ? header : request.query.get('key');
};
const validKey = (key: string | null | undefined) => typeof key === 'string' && (key.startsWith('AIza') || key.startsWith('good'));
const png = (ratio: [number, number], shade: number) => solidPng(ratio[0], ratio[1], shade).toString('base64');
/** What `models.list` says each model is called with. */
const methodsOf = (id: string) =>
  id.startsWith('veo-') ? ['predictLongRunning'] : id.includes('embedding') ? ['embedContent', 'batchEmbedContents'] : ['generateContent', 'countTokens'];

export async function startFakeGoogle(): Promise<GoogleFake> {
  const operations = new Map<string, Operation>();
  let script: VeoStep[] = ['running', 'running', 'succeeded'];
  let listed = GOOGLE_LISTED_MODELS;
  let geminiOutcome: GeminiOutcome = 'image';
  const signed = { count: 0, withKey: 0 };
  let counter = 0;

  const fake = await startFakeServer(async (request, res, origin) => {
    const { method, path } = request;
    const signedLink = /^\/signed\/([\w-]+)\.mp4$/.exec(path);
    if (method === 'GET' && signedLink) {
      signed.count++;
      if (request.headers['x-goog-api-key']) signed.withKey++;
      if (!request.query.get('Signature')) return sendJson(res, 403, { error: 'AccessDenied' });
      return sendBytes(res, await fakeClip(), 'video/mp4');
    }
    if (method === 'GET' && path === '/v1beta/openai/models') {
      const bearer = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
      if (!validKey(bearer)) return sendJson(res, 400, [GOOGLE_ERRORS.badKey]);
      return sendJson(res, 200, { object: 'list', data: [{ id: 'models/gemini-2.5-flash', object: 'model', owned_by: 'google' }] });
    }
    const key = keyOf(request);
    if (!key) return sendJson(res, 403, GOOGLE_ERRORS.noKey);
    if (!validKey(key)) return sendJson(res, 400, GOOGLE_ERRORS.badKey);

    if (method === 'GET' && path === '/v1beta/models') return listModels(res, request);
    const download = /^\/v1beta\/files\/([\w-]+):download$/.exec(path);
    if (method === 'GET' && download) {
      if (request.query.get('alt') !== 'media') return sendJson(res, 200, { name: `files/${download[1]}`, mimeType: 'video/mp4' });
      if (![...operations.keys()].some((name) => name.endsWith(`/${download[1]}`)))
        return sendJson(res, 404, { error: { code: 404, message: 'File not found.', status: 'NOT_FOUND' } });
      res.writeHead(302, { location: `${origin}/signed/${download[1]}.mp4?GoogleAccessId=fake-signer%40google.com&Expires=4102444800&Signature=SECRET` });
      return void res.end();
    }
    const operation = /^\/v1beta\/(models\/[\w.-]+\/operations\/[\w-]+)$/.exec(path);
    if (method === 'GET' && operation) return answerOperation(res, operations.get(operation[1]!), operation[1]!);

    const call = /^\/v1beta\/models\/([\w.-]+):(\w+)$/.exec(path);
    if (method !== 'POST' || !call) return sendJson(res, 404, { error: { code: 404, message: `Method not found: ${method} ${path}`, status: 'NOT_FOUND' } });
    const [, model, verb] = call as unknown as [string, string, string];
    const body = request.body ?? {};
    if (verb === 'generateContent' && GEMINI_IMAGE_MODELS.includes(model)) return gemini(res, model, body);
    if (verb === 'predictLongRunning' && VEO_DURATIONS[model]) {
      const refusal = checkVeo(model, body);
      if (refusal) return sendJson(res, 400, GOOGLE_ERRORS.invalid(refusal));
      const name = `models/${model}/operations/${(++counter).toString(36)}op${Date.now().toString(36)}`;
      operations.set(name, { model, steps: [...script], polls: 0 });
      return sendJson(res, 200, { name });
    }
    return sendJson(res, 404, GOOGLE_ERRORS.notFound(model, verb));
  });

  /** Google's `models.list`: a page of `pageSize` models after the one `pageToken` names (tokens are opaque to callers). */
  function listModels(res: ServerResponse, request: MediaFakeRequest) {
    const size = Number(request.query.get('pageSize') ?? 50);
    if (!Number.isInteger(size) || size < 0) return sendJson(res, 400, GOOGLE_ERRORS.invalid('Invalid value for pageSize.'));
    const pageSize = Math.min(size === 0 ? 50 : size, 1000);
    const token = request.query.get('pageToken');
    const start = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
    if (!Number.isInteger(start) || start < 0) return sendJson(res, 400, GOOGLE_ERRORS.invalid('Invalid page token.'));
    const models = listed
      .slice(start, start + pageSize)
      .map((id) => ({ name: `models/${id}`, version: '001', displayName: id, supportedGenerationMethods: methodsOf(id) }));
    const next = start + pageSize < listed.length ? Buffer.from(String(start + pageSize)).toString('base64url') : null;
    // proto3 JSON leaves empty fields out, as Google does: an empty page is `{}`.
    return sendJson(res, 200, { ...(models.length > 0 ? { models } : {}), ...(next ? { nextPageToken: next } : {}) });
  }

  function gemini(res: ServerResponse, model: string, body: any) {
    const parts = body.contents?.[0]?.parts;
    if (!Array.isArray(parts) || !parts.some((p: any) => typeof p?.text === 'string' && p.text))
      return sendJson(res, 400, GOOGLE_ERRORS.invalid('* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.'));
    for (const part of parts) {
      const inline = part.inline_data ?? part.inlineData;
      if (!inline) continue;
      const mime = inline.mime_type ?? inline.mimeType;
      if (!['image/png', 'image/jpeg', 'image/webp'].includes(mime) || typeof inline.data !== 'string' || Buffer.from(inline.data, 'base64').length === 0) {
        return sendJson(
          res,
          400,
          GOOGLE_ERRORS.invalid('Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'),
        );
      }
    }
    const config = body.generationConfig ?? {};
    const ratio = config.imageConfig?.aspectRatio ?? '1:1';
    if (!GEMINI_SIZES[ratio])
      return sendJson(res, 400, GOOGLE_ERRORS.invalid(`* GenerationConfig.image_config.aspect_ratio: unsupported aspect ratio ${ratio}.`));
    const imageSize = config.imageConfig?.imageSize;
    if (imageSize !== undefined && !(IMAGE_SIZES[model] ?? []).includes(imageSize)) {
      return sendJson(res, 400, GOOGLE_ERRORS.invalid(`* GenerationConfig.image_config.image_size: ${imageSize} is not supported by ${model}.`));
    }
    const modalities: string[] = (config.responseModalities ?? ['TEXT']).map((m: string) => m.toUpperCase());
    // Gemini 3 image models think first: a 1K image is 1120 tokens, the thinking is counted apart and its signature rides
    // on the answer's parts; 2.5 Flash Image's image is 1290 tokens.
    const thinking = IMAGE_SIZES[model] !== undefined;
    const usageMetadata = thinking
      ? { promptTokenCount: 12, candidatesTokenCount: 1120, thoughtsTokenCount: 180, totalTokenCount: 1312 }
      : { promptTokenCount: 12, candidatesTokenCount: 1290, totalTokenCount: 1302 };
    const signed = (part: Record<string, unknown>) => (thinking ? { ...part, thoughtSignature: 'c2lnbmF0dXJl' } : part);
    if (geminiOutcome === 'blocked') return sendJson(res, 200, { promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata, modelVersion: model });
    if (geminiOutcome === 'image_safety') {
      return sendJson(res, 200, {
        candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'IMAGE_SAFETY', index: 0 }],
        usageMetadata,
        modelVersion: model,
      });
    }
    const text = { text: 'Here is the picture you asked for.' };
    const withImage = geminiOutcome === 'image' && modalities.includes('IMAGE');
    const answerParts = withImage
      ? [text, signed({ inlineData: { mimeType: 'image/png', data: png(GEMINI_SIZES[ratio], 100 + ((config.seed ?? 0) % 100)) } })]
      : [signed({ text: "I can't make a picture of that, but I can describe it." })];
    return sendJson(res, 200, {
      candidates: [{ content: { role: 'model', parts: answerParts }, finishReason: 'STOP', index: 0 }],
      usageMetadata,
      modelVersion: model,
      responseId: `r${++counter}`,
    });
  }

  function answerOperation(res: ServerResponse, found: Operation | undefined, name: string) {
    if (!found) return sendJson(res, 404, { error: { code: 404, message: `Operation ${name} not found.`, status: 'NOT_FOUND' } });
    const step = found.steps[Math.min(found.polls, found.steps.length - 1)]!;
    found.polls++;
    const base = { name, metadata: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningMetadata' } };
    const fileId = name.split('/').at(-1)!;
    const response = (generateVideoResponse: unknown) => ({
      ...base,
      done: true,
      response: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse', generateVideoResponse },
    });
    switch (step) {
      case 'running':
        return sendJson(res, 200, base);
      case 'succeeded':
        return sendJson(
          res,
          200,
          response({ generatedSamples: [{ video: { uri: `https://generativelanguage.googleapis.com/v1beta/files/${fileId}:download?alt=media` } }] }),
        );
      case 'inline':
        return fakeClip().then((clip) =>
          sendJson(res, 200, response({ generatedSamples: [{ video: { encodedVideo: clip.toString('base64'), encoding: 'video/mp4' } }] })),
        );
      case 'filtered':
        return sendJson(
          res,
          200,
          response({
            raiMediaFilteredCount: 1,
            raiMediaFilteredReasons: ['We encountered an issue with the audio for your prompt. You have not been charged. Please try a different prompt.'],
          }),
        );
      case 'failed':
        return sendJson(res, 200, { ...base, done: true, error: { code: 13, message: 'Video generation failed due to an internal error. Please try again.' } });
    }
  }

  return Object.assign(fake, {
    openAiBaseUrl: `${fake.origin}/v1beta/openai`,
    operations,
    setVeoScript(steps: VeoStep[]) {
      script = steps;
    },
    setListedModels(ids: string[]) {
      listed = ids;
    },
    setGeminiOutcome(outcome: GeminiOutcome) {
      geminiOutcome = outcome;
    },
    signedDownloads: () => ({ ...signed }),
  });
}

/** The Veo parameters the Gemini API knows (`seed` and `generateAudio` are Vertex AI's: refused below with their own message). */
const VEO_PARAMETERS = ['aspectRatio', 'durationSeconds', 'negativePrompt', 'personGeneration', 'resolution', 'sampleCount', 'seed', 'generateAudio'];

/** Google's checks of a Veo submission on the Gemini API; the refusal message, or null when it is accepted. */
function checkVeo(model: string, body: any): string | null {
  const instance = body.instances?.[0];
  if (!Array.isArray(body.instances) || body.instances.length !== 1 || typeof instance?.prompt !== 'string' || !instance.prompt)
    return 'instances[0].prompt is required.';
  const parameters = body.parameters ?? {};
  if (
    instance.image !== undefined &&
    (typeof instance.image.bytesBase64Encoded !== 'string' || !/^image\/(png|jpeg|webp)$/.test(instance.image.mimeType ?? ''))
  ) {
    return 'instances[0].image must carry bytesBase64Encoded and an image mimeType.';
  }
  if (instance.lastFrame !== undefined) return `lastFrame isn't supported by ${model}.`;
  if (parameters.aspectRatio !== undefined && !['16:9', '9:16'].includes(parameters.aspectRatio))
    return `Aspect ratio ${parameters.aspectRatio} is not supported. Use 16:9 or 9:16.`;
  if (parameters.durationSeconds !== undefined && !VEO_DURATIONS[model]!.includes(parameters.durationSeconds)) {
    return `The number value for \`durationSeconds\` is out of bound. Please provide a value between ${VEO_DURATIONS[model]![0]} and ${VEO_DURATIONS[model]!.at(-1)}, inclusive.`;
  }
  const unknown = Object.keys(parameters).find((key) => !VEO_PARAMETERS.includes(key));
  if (unknown) return `\`${unknown}\` isn't supported by this model. Please remove it and try again.`;
  if (parameters.sampleCount !== undefined && !(Number.isInteger(parameters.sampleCount) && parameters.sampleCount >= 1 && parameters.sampleCount <= 4))
    return 'sampleCount must be between 1 and 4.';
  if (parameters.seed !== undefined) return "`seed` isn't supported by this model. Please remove it and try again.";
  if (parameters.generateAudio !== undefined) return "`generateAudio` isn't supported by this model. Please remove it and try again.";
  if (parameters.resolution !== undefined && (model.startsWith('veo-2') || !['720p', '1080p'].includes(parameters.resolution)))
    return `\`resolution\` ${parameters.resolution} isn't supported by this model.`;
  if (parameters.negativePrompt !== undefined && typeof parameters.negativePrompt !== 'string') return 'negativePrompt must be a string.';
  if (parameters.personGeneration !== undefined) {
    const allowed = model.startsWith('veo-3')
      ? instance.image
        ? ['allow_adult']
        : ['allow_all']
      : instance.image
        ? ['allow_adult', 'dont_allow']
        : PERSON_GENERATION;
    if (!allowed.includes(parameters.personGeneration))
      return `personGeneration ${parameters.personGeneration} isn't supported for this use case. Supported: ${allowed.join(', ')}.`;
  }
  return null;
}
