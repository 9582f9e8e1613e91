import { encodePng } from '../../../../platform/media/png.js';
import { generateSpeechWav } from '../../../../platform/media/speech.js';
import { send, sendBytes, startFake, type MediaFake, type MediaFakeRequest } from '../../../../../test/helpers/fakes/media-server.js';

/**
 * OpenAI Images and speech as the API reference describes them: `POST /v1/images/generations` (JSON), `/v1/images/edits`
 * (multipart), `/v1/audio/speech`, `GET /v1/models`, with the per-model rules and OpenAI's error shape.
 * - Sizes from each model's menu; `n=1` for DALL-E 3; `response_format` refused by GPT Image (it always answers base64).
 * - `quality`: GPT Image takes low, medium, high or auto (the default), DALL-E 3 standard, hd or auto, DALL-E 2
 *   standard or auto; anything else is OpenAI's 400 `invalid_value`. GPT Image answers with the quality and size it
 *   used: this fake resolves `auto` to medium (OpenAI chooses by the prompt) and size `auto` to 1024x1024.
 * - GPT Image's `usage` follows OpenAI's documented output table (https://platform.openai.com/docs/guides/image-generation,
 *   "Cost and latency": output tokens per image by quality and size); a prompt counts a token per 4 bytes, a source
 *   image 65 tokens plus 129 per 512px tile after its shortest side is scaled to 512px (a 1024x1024 source: 194).
 */

/** Output tokens of one GPT Image image, from OpenAI's documentation. */
export const GPT_IMAGE_OUTPUT_TOKENS: Record<string, Record<string, number>> = {
  low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
  medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
  high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
};

const SIZES: Record<string, string[]> = {
  'gpt-image-1': ['1024x1024', '1536x1024', '1024x1536', 'auto'],
  'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'],
  'dall-e-2': ['256x256', '512x512', '1024x1024'],
};
const QUALITIES: Record<string, string[]> = {
  'gpt-image-1': ['low', 'medium', 'high', 'auto'],
  'dall-e-3': ['standard', 'hd', 'auto'],
  'dall-e-2': ['standard', 'auto'],
};
const FORMATS = ['png', 'jpeg', 'webp'];
const isGptImage = (model: string) => model.startsWith('gpt-image');

const openAiError = (message: string, param: string | null = null, code: string | null = null, type = 'invalid_request_error') => ({
  error: { message, type, param, code },
});

export const OPENAI_MEDIA_ERRORS = {
  401: openAiError('Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.', null, 'invalid_api_key'),
  403: openAiError(
    'Your organization must be verified to use the model `gpt-image-1`. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization.',
  ),
  429: openAiError('Rate limit reached for images per minute. Please try again in 12s.', null, 'rate_limit_exceeded', 'requests'),
  500: openAiError('The server had an error while processing your request. Sorry about that!', null, null, 'server_error'),
  503: openAiError('The engine is currently overloaded, please try again later.', null, null, 'server_error'),
} as const;

/** OpenAI's list in its error messages: `'a', 'b', and 'c'`. */
const listed = (values: string[]) => values.map((v, i) => `${i === values.length - 1 && i > 0 ? 'and ' : ''}'${v}'`).join(', ');
const invalidValue = (param: string, value: unknown, values: string[]) =>
  openAiError(`Invalid value: '${String(value)}'. Supported values are: ${listed(values)}.`, param, 'invalid_value');

export interface OpenAiMediaFakeOptions {
  /** Answer every image call with `url` items instead of `b64_json` (as some compatible servers do). */
  alwaysUrl?: boolean;
}

type FakeAnswer = { status: number; json: unknown } | { status: number; bytes: Buffer; contentType: string };
interface MultipartFile {
  filename: string;
  type: string;
  bytes: Buffer;
}
const isFile = (value: unknown): value is MultipartFile => typeof value === 'object' && value !== null && Buffer.isBuffer((value as MultipartFile).bytes);
const json = (status: number, body: unknown): FakeAnswer => ({ status, json: body });
/** Encoded once per size and shade: a megapixel PNG takes a while, and a slow answer would time the caller out. */
const pngs = new Map<string, Buffer>();
const solid = (width: number, height: number, shade: number) => {
  const key = `${width}x${height}:${shade}`;
  return pngs.get(key) ?? pngs.set(key, encodePng(width, height, new Uint8Array(width * height * 3).fill(shade))).get(key)!;
};

/** A source image's input tokens: 65 plus 129 per 512px tile once the shortest side is at most 512px within 2048. */
export function sourceImageTokens(width: number, height: number): number {
  let [w, h] = [width, height];
  const fit = Math.min(1, 2048 / Math.max(w, h));
  [w, h] = [w * fit, h * fit];
  const shrink = Math.min(1, 512 / Math.min(w, h));
  [w, h] = [Math.floor(w * shrink), Math.floor(h * shrink)];
  return 65 + 129 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

const pngSize = (file: MultipartFile) => ({ width: file.bytes.readUInt32BE(16), height: file.bytes.readUInt32BE(20) });

export function startFakeOpenAiMedia(options: OpenAiMediaFakeOptions = {}): Promise<MediaFake & { downloads: () => number }> {
  let downloads = 0;
  const stored = new Map<string, Buffer>();
  return startFake('/v1', async (_req, res, request, origin) => {
    const out = answer(request, origin);
    if ('json' in out) send(res, out.status, out.json);
    else sendBytes(res, out.bytes, out.contentType);
  }).then((fake) => Object.assign(fake, { downloads: () => downloads }));

  function answer(request: MediaFakeRequest, origin: string): FakeAnswer {
    const key = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
    if (request.method === 'GET' && request.path.startsWith('/files/')) {
      const bytes = stored.get(request.path.slice('/files/'.length));
      if (!bytes) return json(404, { error: 'not found' });
      downloads++;
      return { status: 200, bytes, contentType: 'image/png' };
    }
    if (!key.startsWith('sk-')) return json(401, OPENAI_MEDIA_ERRORS[401]);
    if (request.method === 'GET' && request.path === '/v1/models') {
      return json(200, { object: 'list', data: Object.keys(SIZES).map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'system' })) });
    }
    if (request.method === 'POST' && request.path === '/v1/audio/speech') return speech(request.body);
    const generate = request.method === 'POST' && request.path === '/v1/images/generations';
    const edit = request.method === 'POST' && request.path === '/v1/images/edits';
    if (!generate && !edit) return json(404, openAiError(`Invalid URL (${request.method} ${request.path})`));
    return images(request.body ?? {}, edit, origin);
  }

  function speech(body: any): FakeAnswer {
    if (!body?.input || !body?.voice)
      return json(
        400,
        openAiError(`Missing required parameter: '${body?.input ? 'voice' : 'input'}'.`, body?.input ? 'voice' : 'input', 'missing_required_parameter'),
      );
    if (body.response_format !== 'wav') return json(400, openAiError('This fake only speaks WAV.', 'response_format'));
    const wav = generateSpeechWav({ text: body.input, seed: 7, voice: body.voice });
    // OpenAI streams WAV, so the header declares an unknown (maximal) length.
    wav.writeUInt32LE(0xffffffff, 4);
    wav.writeUInt32LE(0xffffffff, 40);
    return { status: 200, bytes: wav, contentType: 'audio/wav' };
  }

  function images(body: any, edit: boolean, origin: string): FakeAnswer {
    const model = String(body.model ?? 'dall-e-2');
    const n = Number(body.n ?? 1);
    const size = String(body.size ?? (isGptImage(model) ? 'auto' : '1024x1024'));
    const gpt = isGptImage(model);
    if (!SIZES[model]) return json(404, openAiError(`The model \`${model}\` does not exist or you do not have access to it.`, null, 'model_not_found'));
    if (!body.prompt) return json(400, openAiError("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter'));
    const sources = edit ? [body.image, body['image[]']].flat().filter(isFile) : [];
    if (edit && sources.length === 0) return json(400, openAiError("Missing required parameter: 'image'.", 'image', 'missing_required_parameter'));
    if (edit && model === 'dall-e-3') return json(400, openAiError('Image edits are not supported with dall-e-3.', 'model'));
    if (gpt && body.response_format !== undefined)
      return json(400, openAiError("Unknown parameter: 'response_format'.", 'response_format', 'unknown_parameter'));
    if (!SIZES[model].includes(size)) return json(400, invalidValue('size', size, SIZES[model]));
    const asked = body.quality ?? 'auto';
    if (!QUALITIES[model]!.includes(asked)) return json(400, invalidValue('quality', asked, QUALITIES[model]!));
    if (body.output_format !== undefined && (!gpt || !FORMATS.includes(body.output_format))) {
      return json(
        400,
        gpt
          ? invalidValue('output_format', body.output_format, FORMATS)
          : openAiError("Unknown parameter: 'output_format'.", 'output_format', 'unknown_parameter'),
      );
    }
    if (model === 'dall-e-3' && n !== 1) return json(400, openAiError('You must provide n=1 for this model.', 'n'));
    if (!(n >= 1 && n <= 10))
      return json(400, openAiError(`Invalid 'n': integer above maximum value. Expected a value <= 10, but got ${n} instead.`, 'n', 'integer_above_max_value'));
    const used = size === 'auto' ? '1024x1024' : size;
    const [width, height] = used.split('x').map(Number) as [number, number];
    const asUrl = options.alwaysUrl || (model.startsWith('dall-e') && body.response_format !== 'b64_json');
    const data = Array.from({ length: n }, (_, i) => {
      const png = solid(width, height, 40 + i * 20);
      if (!asUrl) return { b64_json: png.toString('base64') };
      const name = `img-${stored.size + 1}.png`;
      stored.set(name, png);
      return {
        url: `${origin}/files/${name}?se=2030-01-01&sig=SECRET`,
        ...(model === 'dall-e-3' ? { revised_prompt: `A detailed picture: ${body.prompt}` } : {}),
      };
    });
    const created = Math.floor(Date.now() / 1000);
    if (!gpt) return json(200, { created, data });
    const quality = asked === 'auto' ? 'medium' : asked;
    const text = Math.max(1, Math.ceil(Buffer.byteLength(String(body.prompt), 'utf8') / 4));
    const image = sources.reduce((sum, file) => sum + sourceImageTokens(pngSize(file).width, pngSize(file).height), 0);
    const output = n * GPT_IMAGE_OUTPUT_TOKENS[quality]![used]!;
    return json(200, {
      created,
      background: 'opaque',
      data,
      output_format: body.output_format ?? 'png',
      quality,
      size: used,
      usage: {
        total_tokens: text + image + output,
        input_tokens: text + image,
        output_tokens: output,
        input_tokens_details: { text_tokens: text, image_tokens: image },
      },
    });
  }
}
