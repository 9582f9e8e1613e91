import { randomBytes } from 'node:crypto';
import { generateSpeechWav } from '../../../../platform/media/speech.js';
import { silentMp3, solidPng, type MediaFake, type MediaFakeRequest } from '../../../../../test/helpers/fake-media-upstreams.js';
import { header, isFile, startFakeServer, type FakeAnswer } from '../../../../../test/helpers/fakes/multipart-server.js';

/**
 * Stability AI's v2beta API as its OpenAPI reference describes it: multipart/form-data only, `authorization: Bearer`,
 * the answer's encoding chosen by `accept` (bytes with `finish-reason` and `seed` headers, or
 * `{ image|audio, finish_reason, seed }`), errors as `{ id, name, errors }`. Keys starting with `sk-stab-` are valid.
 * A prompt containing "forbidden" is refused by moderation (403); one containing "blurred" comes back CONTENT_FILTERED.
 */

export const STABILITY_ASPECT_RATIOS: Record<string, [number, number]> = {
  '21:9': [1536, 640],
  '16:9': [1344, 768],
  '3:2': [1216, 832],
  '5:4': [1088, 896],
  '1:1': [1024, 1024],
  '4:5': [896, 1088],
  '2:3': [832, 1216],
  '9:16': [768, 1344],
  '9:21': [640, 1536],
};
const SD3_MODELS = ['sd3.5-large', 'sd3.5-large-turbo', 'sd3.5-medium', 'sd3-large', 'sd3-large-turbo', 'sd3-medium'];
const AUDIO_MODELS = ['stable-audio-2', 'stable-audio-2.5'];
export const STABILITY_MODERATION_MESSAGE =
  'Your request was flagged by our content moderation system, as a result your request was denied and you were not charged.';

const errorBody = (name: string, ...errors: string[]) => ({ id: randomBytes(16).toString('hex'), name, errors });
const fail = (status: number, name: string, ...errors: string[]): FakeAnswer => ({ status, json: errorBody(name, ...errors) });

export interface StabilityFake extends MediaFake {
  /** Generation calls only (the key check excluded). */
  generations(): MediaFakeRequest[];
}

/** Encoded once per size: a megapixel PNG takes a while. */
const pngs = new Map<string, Buffer>();
const pngOf = (width: number, height: number) =>
  pngs.get(`${width}x${height}`) ?? pngs.set(`${width}x${height}`, solidPng(width, height, 90)).get(`${width}x${height}`)!;

function imageAnswer(request: MediaFakeRequest, width: number, height: number, seed: number): FakeAnswer {
  const prompt = String(request.body.prompt);
  const finishReason = prompt.includes('blurred') ? 'CONTENT_FILTERED' : 'SUCCESS';
  const png = pngOf(width, height);
  if (header(request, 'accept').startsWith('application/json')) {
    return { status: 200, json: { image: png.toString('base64'), finish_reason: finishReason, seed }, contentType: 'application/json; type=image/png' };
  }
  return {
    status: 200,
    bytes: png,
    contentType: 'image/png',
    headers: { 'finish-reason': finishReason, seed: String(seed), 'x-request-id': randomBytes(8).toString('hex') },
  };
}

function generateImage(request: MediaFakeRequest, service: string): FakeAnswer {
  const body = request.body ?? {};
  if (!header(request, 'content-type').startsWith('multipart/form-data')) return fail(400, 'bad_request', 'content-type: must be multipart/form-data');
  if (typeof body.prompt !== 'string' || !body.prompt) return fail(400, 'bad_request', 'prompt: is required');
  if (body.prompt.includes('forbidden')) return fail(403, 'content_moderation', STABILITY_MODERATION_MESSAGE);
  const sd3 = service === 'sd3';
  const imageToImage = sd3 ? body.mode === 'image-to-image' : body.image !== undefined;
  if (sd3 && body.model !== undefined && !SD3_MODELS.includes(body.model)) return fail(400, 'bad_request', `model: must be one of ${SD3_MODELS.join(', ')}`);
  if (sd3 && String(body.model).includes('turbo') && body.negative_prompt !== undefined)
    return fail(400, 'bad_request', `negative_prompt: not supported by ${body.model}`);
  if (service === 'core' && body.image !== undefined) return fail(400, 'bad_request', 'image: unknown field');
  if (body.aspect_ratio !== undefined && (imageToImage || !STABILITY_ASPECT_RATIOS[body.aspect_ratio])) {
    return fail(
      400,
      'bad_request',
      imageToImage ? 'aspect_ratio: only valid for text-to-image requests' : `aspect_ratio: must be one of ${Object.keys(STABILITY_ASPECT_RATIOS).join(', ')}`,
    );
  }
  const formats = sd3 ? ['png', 'jpeg'] : ['png', 'jpeg', 'webp'];
  if (body.output_format !== undefined && !formats.includes(body.output_format))
    return fail(400, 'bad_request', `output_format: must be one of ${formats.join(', ')}`);
  if (body.seed !== undefined && !(Number(body.seed) >= 0 && Number(body.seed) <= 4_294_967_294))
    return fail(400, 'bad_request', 'seed: must be between 0 and 4294967294');
  if (imageToImage) {
    if (!isFile(body.image)) return fail(400, 'bad_request', 'image: is required for image-to-image');
    if (!['image/png', 'image/jpeg', 'image/webp'].includes(body.image.type)) return fail(400, 'bad_request', 'image: must be jpeg, png or webp');
    const strength = Number(body.strength);
    if (body.strength === undefined || !(strength >= 0 && strength <= 1))
      return fail(400, 'bad_request', 'strength: is required with an image and must be between 0 and 1');
  }
  const [width, height] = imageToImage ? [1024, 1024] : STABILITY_ASPECT_RATIOS[body.aspect_ratio ?? '1:1']!;
  return imageAnswer(request, width, height, Number(body.seed) || 1234567);
}

function generateAudio(request: MediaFakeRequest): FakeAnswer {
  const body = request.body ?? {};
  if (!header(request, 'content-type').startsWith('multipart/form-data')) return fail(400, 'bad_request', 'content-type: must be multipart/form-data');
  if (typeof body.prompt !== 'string' || !body.prompt) return fail(400, 'bad_request', 'prompt: is required');
  if (body.prompt.includes('forbidden')) return fail(403, 'content_moderation', STABILITY_MODERATION_MESSAGE);
  if (body.model !== undefined && !AUDIO_MODELS.includes(body.model)) return fail(400, 'bad_request', `model: must be one of ${AUDIO_MODELS.join(', ')}`);
  if (body.duration !== undefined && !(Number(body.duration) >= 1 && Number(body.duration) <= 190))
    return fail(400, 'bad_request', 'duration: must be between 1 and 190');
  const format = body.output_format ?? 'mp3';
  if (!['mp3', 'wav'].includes(format)) return fail(400, 'bad_request', 'output_format: must be one of mp3, wav');
  const audio = format === 'wav' ? generateSpeechWav({ text: body.prompt, seed: 5, voice: 'neutral' }) : silentMp3(40);
  const seed = Number(body.seed) || 42;
  if (header(request, 'accept').startsWith('application/json'))
    return { status: 200, json: { audio: audio.toString('base64'), finish_reason: 'SUCCESS', seed } };
  return { status: 200, bytes: audio, contentType: format === 'wav' ? 'audio/wav' : 'audio/mpeg', headers: { 'finish-reason': 'SUCCESS', seed: String(seed) } };
}

export async function startFakeStability(): Promise<StabilityFake> {
  const fake = await startFakeServer((request) => {
    if (!/^Bearer sk-stab-\w+/.test(header(request, 'authorization'))) return fail(401, 'unauthorized', 'authorization: invalid or missing API key');
    if (request.method === 'GET' && request.path === '/v1/user/account') {
      return {
        status: 200,
        json: { id: 'user-1234', email: 'ops@example.com', organizations: [{ id: 'org-1234', name: 'Storefront', role: 'MEMBER', is_default: true }] },
      };
    }
    const image = /^\/v2beta\/stable-image\/generate\/(ultra|core|sd3)$/.exec(request.path);
    if (request.method === 'POST' && image) return generateImage(request, image[1]!);
    if (request.method === 'POST' && request.path === '/v2beta/audio/stable-audio-2/text-to-audio') return generateAudio(request);
    return fail(404, 'not_found', `${request.method} ${request.path}: not found`);
  });
  return Object.assign(fake, { generations: () => fake.requests.filter((r) => r.method === 'POST') });
}
