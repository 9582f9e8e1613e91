import { UpstreamError, type UpstreamCredential } from '../types.js';
import { mediaTypeOf } from '../media/download.js';
import { GOOGLE_INLINE_MAX_BYTES, googleError, isOk, type GoogleClient } from './api.js';
import { jsonOf } from '../media/http.js';
import type { ImageRequest, ImageResult, MediaOutput } from '../media/media-types.js';
import { imageSizeRule, snapImageSize } from '../media/sizes.js';

/**
 * Images on the Gemini API (see media.ts for the documentation): the Gemini image models,
 * `POST /v1beta/models/{model}:generateContent`, one image per call, from text or from text and a source image (an
 * edit), at ten aspect ratios; `generationConfig.seed` is taken, a negative prompt is not. The Gemini 3 models also
 * take `imageConfig.imageSize` (1K, 2K, 4K) and are asked for 1K, the size their catalog price is for; they think
 * before drawing, and any interim image they return is a thought part, never the answer. Imagen (`:predict`) is gone
 * from the Gemini API (shut down on 2026-08-17): an Imagen id is sent like any other model and Google's 404 for it
 * answers 503 MODEL_UNAVAILABLE.
 */
/** Finish and block reasons that are a safety refusal rather than a model that merely answered in text. */
const SAFETY_REASONS = new Set([
  'SAFETY',
  'PROHIBITED_CONTENT',
  'BLOCKLIST',
  'SPII',
  'RECITATION',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
  'JAILBREAK',
  'MODEL_ARMOR',
]);
/** Models that take `imageConfig.imageSize`; Gemini 2.5 Flash Image makes 1K images only and is sent none. */
const SIZED_MODELS = /^gemini-3(\.\d+)?-/;

const refused = (message: string, code: string) => new UpstreamError('bad_request', message, null, code);

function checkInline(bytes: Buffer, what: string): void {
  if (bytes.length > GOOGLE_INLINE_MAX_BYTES) {
    throw refused(
      `The ${what} is ${Math.ceil(bytes.length / 1024 / 1024)} MB; the Gemini API takes inline images of at most 20 MB. Send a smaller image.`,
      'image_too_large',
    );
  }
}

function bytesOutput(base64: string, declared: string | null): MediaOutput {
  const bytes = Buffer.from(base64, 'base64');
  return { kind: 'bytes', bytes, mimeType: mediaTypeOf(bytes, declared, 'image/png') };
}

interface GeminiPart {
  text?: unknown;
  thought?: unknown;
  inlineData?: { mimeType?: unknown; data?: unknown };
  inline_data?: { mime_type?: unknown; data?: unknown };
}
interface GeminiAnswer {
  promptFeedback?: { blockReason?: unknown; blockReasonMessage?: unknown };
  candidates?: { content?: { parts?: GeminiPart[] }; finishReason?: unknown; finishMessage?: unknown }[];
}

/** The image of a part, in the camelCase Google answers with (or the snake_case of its REST examples). */
function imageOf(part: GeminiPart): MediaOutput | null {
  if (part.thought === true) return null;
  const camel = part.inlineData;
  const snake = part.inline_data;
  const data = camel?.data ?? snake?.data;
  const mimeType = camel?.mimeType ?? snake?.mime_type;
  if (typeof data !== 'string' || data.length === 0) return null;
  if (typeof mimeType === 'string' && !mimeType.startsWith('image/')) return null;
  return bytesOutput(data, typeof mimeType === 'string' ? mimeType : null);
}

export async function generateGeminiImage(client: GoogleClient, credential: UpstreamCredential, request: ImageRequest): Promise<ImageResult> {
  const size = snapImageSize(imageSizeRule('google', request.model), request.width, request.height);
  const parts: Record<string, unknown>[] = [{ text: request.prompt }];
  if (request.initImage) {
    checkInline(request.initImage.bytes, 'source image');
    parts.push({ inline_data: { mime_type: request.initImage.mimeType, data: request.initImage.bytes.toString('base64') } });
  }
  const body = {
    contents: [{ role: 'user', parts }],
    generationConfig: {
      // Text is allowed beside the image so that a model which declines says why.
      responseModalities: ['TEXT', 'IMAGE'],
      imageConfig: SIZED_MODELS.test(request.model) ? { aspectRatio: size.aspectRatio, imageSize: '1K' } : { aspectRatio: size.aspectRatio },
      ...(request.seed === null ? {} : { seed: request.seed }),
    },
  };
  const response = await client.call(credential, 'POST', `/v1beta/models/${encodeURIComponent(request.model)}:generateContent`, body, request.signal);
  if (!isOk(response)) throw googleError(response, request.model);
  const answer = (jsonOf(response) ?? {}) as GeminiAnswer;
  const blockReason = answer.promptFeedback?.blockReason;
  if (typeof blockReason === 'string' && blockReason) {
    const detail = typeof answer.promptFeedback?.blockReasonMessage === 'string' ? `: ${answer.promptFeedback.blockReasonMessage}` : '';
    throw refused(`Google blocked the prompt (${blockReason})${detail}. Rephrase the prompt and try again.`, blockReason);
  }
  const candidate = Array.isArray(answer.candidates) ? answer.candidates[0] : undefined;
  const candidateParts = Array.isArray(candidate?.content?.parts) ? candidate.content.parts : [];
  const image = candidateParts.map(imageOf).find((output) => output !== null);
  if (image) return { images: [image], count: 1, maxPerCall: 1, width: size.width, height: size.height };

  const finish = typeof candidate?.finishReason === 'string' ? candidate.finishReason : null;
  const finishMessage = typeof candidate?.finishMessage === 'string' && candidate.finishMessage ? `: ${candidate.finishMessage}` : '';
  if (finish && SAFETY_REASONS.has(finish)) {
    throw refused(
      `Google's safety filters stopped the image (${finish})${finishMessage}. Rephrase the prompt${request.initImage ? ' or use another source image' : ''}.`,
      finish,
    );
  }
  const said = candidateParts
    .map((p) => (typeof p.text === 'string' && p.thought !== true ? p.text : ''))
    .join(' ')
    .trim();
  throw refused(
    `The model answered without an image${finish ? ` (${finish})` : ''}${said ? `: "${said.slice(0, 300)}"` : finishMessage}. Ask for a picture explicitly in the prompt.`,
    finish ?? 'no_image',
  );
}
