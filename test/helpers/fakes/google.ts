import type { ServerResponse } from 'node:http';
import { solidPng, type MediaFake, type MediaFakeRequest } from '../fake-media-upstreams.js';
import { fakeClip, sendBytes, sendJson, startFakeServer } from './server.js';

/**
 * A local Gemini API (generativelanguage.googleapis.com) for the media models, checking what it receives:
 * - `POST /v1beta/models/{imagen}:predict` (Imagen 4: sampleCount 1-4, Ultra 1; five aspect ratios; sampleImageSize
 *   on Standard and Ultra only; no seed or negative prompt on the Gemini API), answering `predictions[]`;
 * - `POST /v1beta/models/gemini-2.5-flash-image:generateContent` (text and `inline_data` parts, `imageConfig`),
 *   answering one image part, or Google's refusals;
 * - `POST /v1beta/models/{veo}:predictLongRunning` -> `{ name }`, `GET /v1beta/{name}` walking a script of states,
 *   `GET /v1beta/files/{id}:download?alt=media` -> 302 to a signed link that needs no key;
 * - `GET /v1beta/models` (key check) and the OpenAI-compatible `GET /v1beta/openai/models` the text adapter checks with.
 * Keys go in `x-goog-api-key` (or `?key=`); a key is valid when it starts with `AIza` or `good`. Google's own errors:
 * a missing key is 403 PERMISSION_DENIED, a wrong one 400 INVALID_ARGUMENT with reason API_KEY_INVALID.
 */

export const GOOGLE_ERRORS = {
  badKey: { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } }] } },
  noKey: { error: { code: 403, message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", status: 'PERMISSION_DENIED' } },
  modelDenied: (model: string) => ({ error: { code: 403, message: `Your project does not have access to model ${model}. Request access or choose another model.`, status: 'PERMISSION_DENIED' } }),
  quota: { error: { code: 429, message: 'You exceeded your current quota, please check your plan and billing details.', status: 'RESOURCE_EXHAUSTED' } },
  internal: { error: { code: 500, message: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting', status: 'INTERNAL' } },
  unavailable: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } },
  invalid: (message: string) => ({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } }),
  notFound: (model: string, method: string) => ({ error: { code: 404, message: `models/${model} is not found for API version v1beta, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`, status: 'NOT_FOUND' } }),
};

const IMAGEN_SIZES: Record<string, [number, number]> = { '1:1': [1024, 1024], '3:4': [896, 1280], '4:3': [1280, 896], '9:16': [768, 1408], '16:9': [1408, 768] };
const IMAGEN_MODELS = ['imagen-4.0-generate-001', 'imagen-4.0-fast-generate-001', 'imagen-4.0-ultra-generate-001'];
const GEMINI_SIZES: Record<string, [number, number]> = {
  '1:1': [1024, 1024], '2:3': [832, 1248], '3:2': [1248, 832], '3:4': [864, 1184], '4:3': [1184, 864],
  '4:5': [896, 1152], '5:4': [1152, 896], '9:16': [768, 1344], '16:9': [1344, 768], '21:9': [1536, 672],
};
const GEMINI_IMAGE_MODELS = ['gemini-2.5-flash-image'];
const VEO_DURATIONS: Record<string, number[]> = { 'veo-3.0-generate-001': [8], 'veo-3.0-fast-generate-001': [8], 'veo-2.0-generate-001': [5, 6, 7, 8] };
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
  /** The next Imagen calls drop this many of their images for safety (reported with `raiFilteredReason`). */
  filterImages(count: number): void;
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

export async function startFakeGoogle(): Promise<GoogleFake> {
  const operations = new Map<string, Operation>();
  let script: VeoStep[] = ['running', 'running', 'succeeded'];
  let toFilter = 0;
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

    if (method === 'GET' && path === '/v1beta/models') {
      return sendJson(res, 200, { models: [{ name: 'models/gemini-2.5-flash', displayName: 'Gemini 2.5 Flash', supportedGenerationMethods: ['generateContent'] }], nextPageToken: 'next' });
    }
    const download = /^\/v1beta\/files\/([\w-]+):download$/.exec(path);
    if (method === 'GET' && download) {
      if (request.query.get('alt') !== 'media') return sendJson(res, 200, { name: `files/${download[1]}`, mimeType: 'video/mp4' });
      if (![...operations.keys()].some((name) => name.endsWith(`/${download[1]}`))) return sendJson(res, 404, { error: { code: 404, message: 'File not found.', status: 'NOT_FOUND' } });
      res.writeHead(302, { location: `${origin}/signed/${download[1]}.mp4?GoogleAccessId=fake-signer%40google.com&Expires=4102444800&Signature=SECRET` });
      return void res.end();
    }
    const operation = /^\/v1beta\/(models\/[\w.-]+\/operations\/[\w-]+)$/.exec(path);
    if (method === 'GET' && operation) return answerOperation(res, operations.get(operation[1]!), operation[1]!);

    const call = /^\/v1beta\/models\/([\w.-]+):(\w+)$/.exec(path);
    if (method !== 'POST' || !call) return sendJson(res, 404, { error: { code: 404, message: `Method not found: ${method} ${path}`, status: 'NOT_FOUND' } });
    const [, model, verb] = call as unknown as [string, string, string];
    const body = request.body ?? {};
    if (verb === 'predict' && IMAGEN_MODELS.includes(model)) return imagen(res, model, body);
    if (verb === 'generateContent' && GEMINI_IMAGE_MODELS.includes(model)) return gemini(res, body);
    if (verb === 'predictLongRunning' && VEO_DURATIONS[model]) {
      const refusal = checkVeo(model, body);
      if (refusal) return sendJson(res, 400, GOOGLE_ERRORS.invalid(refusal));
      const name = `models/${model}/operations/${(++counter).toString(36)}op${Date.now().toString(36)}`;
      operations.set(name, { model, steps: [...script], polls: 0 });
      return sendJson(res, 200, { name });
    }
    return sendJson(res, 404, GOOGLE_ERRORS.notFound(model, verb));
  });

  function imagen(res: ServerResponse, model: string, body: any) {
    const parameters = body.parameters ?? {};
    const prompt = body.instances?.[0]?.prompt;
    if (!Array.isArray(body.instances) || body.instances.length !== 1 || typeof prompt !== 'string' || !prompt) return sendJson(res, 400, GOOGLE_ERRORS.invalid('instances[0].prompt is required.'));
    const count = parameters.sampleCount ?? 4;
    const max = model.includes('ultra') ? 1 : 4;
    if (!Number.isInteger(count) || count < 1 || count > max) return sendJson(res, 400, GOOGLE_ERRORS.invalid(`sampleCount must be between 1 and ${max} for ${model}.`));
    const ratio = parameters.aspectRatio ?? '1:1';
    if (!IMAGEN_SIZES[ratio]) return sendJson(res, 400, GOOGLE_ERRORS.invalid(`Unsupported aspect ratio: ${ratio}. Supported values are 1:1, 3:4, 4:3, 9:16, 16:9.`));
    if (parameters.personGeneration !== undefined && !PERSON_GENERATION.includes(parameters.personGeneration)) return sendJson(res, 400, GOOGLE_ERRORS.invalid('Invalid personGeneration.'));
    if (parameters.negativePrompt !== undefined) return sendJson(res, 400, GOOGLE_ERRORS.invalid('Negative prompts are not supported by this model.'));
    if (parameters.seed !== undefined) return sendJson(res, 400, GOOGLE_ERRORS.invalid('Seed is not supported in the Gemini API.'));
    if (parameters.sampleImageSize !== undefined && (model.includes('fast') || !['1K', '2K'].includes(parameters.sampleImageSize))) {
      return sendJson(res, 400, GOOGLE_ERRORS.invalid(`sampleImageSize ${parameters.sampleImageSize} is not supported by ${model}.`));
    }
    const filtered = Math.min(count, toFilter);
    toFilter = 0;
    const predictions: unknown[] = [];
    for (let i = 0; i < count - filtered; i++) predictions.push({ mimeType: 'image/png', bytesBase64Encoded: png(IMAGEN_SIZES[ratio], 60 + i * 40) });
    if (parameters.includeRaiReason === true) {
      for (let i = 0; i < filtered; i++) predictions.push({ raiFilteredReason: 'Your current safety filter threshold filtered out the generated image. Please try rephrasing your prompt.' });
    }
    return sendJson(res, 200, predictions.length > 0 ? { predictions } : {});
  }

  function gemini(res: ServerResponse, body: any) {
    const parts = body.contents?.[0]?.parts;
    if (!Array.isArray(parts) || !parts.some((p: any) => typeof p?.text === 'string' && p.text)) return sendJson(res, 400, GOOGLE_ERRORS.invalid('* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.'));
    for (const part of parts) {
      const inline = part.inline_data ?? part.inlineData;
      if (!inline) continue;
      const mime = inline.mime_type ?? inline.mimeType;
      if (!['image/png', 'image/jpeg', 'image/webp'].includes(mime) || typeof inline.data !== 'string' || Buffer.from(inline.data, 'base64').length === 0) {
        return sendJson(res, 400, GOOGLE_ERRORS.invalid('Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'));
      }
    }
    const config = body.generationConfig ?? {};
    const ratio = config.imageConfig?.aspectRatio ?? '1:1';
    if (!GEMINI_SIZES[ratio]) return sendJson(res, 400, GOOGLE_ERRORS.invalid(`* GenerationConfig.image_config.aspect_ratio: unsupported aspect ratio ${ratio}.`));
    const modalities: string[] = (config.responseModalities ?? ['TEXT']).map((m: string) => m.toUpperCase());
    const usageMetadata = { promptTokenCount: 12, candidatesTokenCount: 1290, totalTokenCount: 1302 };
    if (geminiOutcome === 'blocked') return sendJson(res, 200, { promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata, modelVersion: 'gemini-2.5-flash-image' });
    if (geminiOutcome === 'image_safety') {
      return sendJson(res, 200, { candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'IMAGE_SAFETY', index: 0 }], usageMetadata, modelVersion: 'gemini-2.5-flash-image' });
    }
    const text = { text: 'Here is the picture you asked for.' };
    const withImage = geminiOutcome === 'image' && modalities.includes('IMAGE');
    const answerParts = withImage ? [text, { inlineData: { mimeType: 'image/png', data: png(GEMINI_SIZES[ratio], 100 + ((config.seed ?? 0) % 100)) } }] : [{ text: "I can't make a picture of that, but I can describe it." }];
    return sendJson(res, 200, { candidates: [{ content: { role: 'model', parts: answerParts }, finishReason: 'STOP', index: 0 }], usageMetadata, modelVersion: 'gemini-2.5-flash-image', responseId: `r${++counter}` });
  }

  function answerOperation(res: ServerResponse, found: Operation | undefined, name: string) {
    if (!found) return sendJson(res, 404, { error: { code: 404, message: `Operation ${name} not found.`, status: 'NOT_FOUND' } });
    const step = found.steps[Math.min(found.polls, found.steps.length - 1)]!;
    found.polls++;
    const base = { name, metadata: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningMetadata' } };
    const fileId = name.split('/').at(-1)!;
    const response = (generateVideoResponse: unknown) => ({ ...base, done: true, response: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse', generateVideoResponse } });
    switch (step) {
      case 'running':
        return sendJson(res, 200, base);
      case 'succeeded':
        return sendJson(res, 200, response({ generatedSamples: [{ video: { uri: `https://generativelanguage.googleapis.com/v1beta/files/${fileId}:download?alt=media` } }] }));
      case 'inline':
        return fakeClip().then((clip) => sendJson(res, 200, response({ generatedSamples: [{ video: { encodedVideo: clip.toString('base64'), encoding: 'video/mp4' } }] })));
      case 'filtered':
        return sendJson(res, 200, response({ raiMediaFilteredCount: 1, raiMediaFilteredReasons: ["We encountered an issue with the audio for your prompt. You have not been charged. Please try a different prompt."] }));
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
    filterImages(count: number) {
      toFilter = count;
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
  if (!Array.isArray(body.instances) || body.instances.length !== 1 || typeof instance?.prompt !== 'string' || !instance.prompt) return 'instances[0].prompt is required.';
  const parameters = body.parameters ?? {};
  if (instance.image !== undefined && (typeof instance.image.bytesBase64Encoded !== 'string' || !/^image\/(png|jpeg|webp)$/.test(instance.image.mimeType ?? ''))) {
    return 'instances[0].image must carry bytesBase64Encoded and an image mimeType.';
  }
  if (instance.lastFrame !== undefined) return `lastFrame isn't supported by ${model}.`;
  if (parameters.aspectRatio !== undefined && !['16:9', '9:16'].includes(parameters.aspectRatio)) return `Aspect ratio ${parameters.aspectRatio} is not supported. Use 16:9 or 9:16.`;
  if (parameters.durationSeconds !== undefined && !VEO_DURATIONS[model]!.includes(parameters.durationSeconds)) {
    return `The number value for \`durationSeconds\` is out of bound. Please provide a value between ${VEO_DURATIONS[model]![0]} and ${VEO_DURATIONS[model]!.at(-1)}, inclusive.`;
  }
  const unknown = Object.keys(parameters).find((key) => !VEO_PARAMETERS.includes(key));
  if (unknown) return `\`${unknown}\` isn't supported by this model. Please remove it and try again.`;
  if (parameters.sampleCount !== undefined && !(Number.isInteger(parameters.sampleCount) && parameters.sampleCount >= 1 && parameters.sampleCount <= 4)) return 'sampleCount must be between 1 and 4.';
  if (parameters.seed !== undefined) return "`seed` isn't supported by this model. Please remove it and try again.";
  if (parameters.generateAudio !== undefined) return "`generateAudio` isn't supported by this model. Please remove it and try again.";
  if (parameters.resolution !== undefined && (model.startsWith('veo-2') || !['720p', '1080p'].includes(parameters.resolution))) return `\`resolution\` ${parameters.resolution} isn't supported by this model.`;
  if (parameters.negativePrompt !== undefined && typeof parameters.negativePrompt !== 'string') return 'negativePrompt must be a string.';
  if (parameters.personGeneration !== undefined) {
    const allowed = model.startsWith('veo-3') ? (instance.image ? ['allow_adult'] : ['allow_all']) : instance.image ? ['allow_adult', 'dont_allow'] : PERSON_GENERATION;
    if (!allowed.includes(parameters.personGeneration)) return `personGeneration ${parameters.personGeneration} isn't supported for this use case. Supported: ${allowed.join(', ')}.`;
  }
  return null;
}
