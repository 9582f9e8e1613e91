import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { encodePng } from '../../src/platform/media/png.js';
import { generateSpeechWav } from '../../src/platform/media/speech.js';
import { generateMp4 } from '../../src/platform/media/video.js';

/**
 * Local stand-ins for media providers, speaking their wire formats:
 * - OpenAI Images and speech: `POST /v1/images/generations` (JSON), `/v1/images/edits` (multipart), `/v1/audio/speech`,
 *   with the real per-model rules (size menus, `n=1` for DALL·E 3, `response_format` refused by GPT Image) and errors.
 * - Runway: `POST /v1/image_to_video` / `/v1/text_to_video` -> `{ id }`, `GET`/`DELETE /v1/tasks/:id`, signed output URLs.
 * - ElevenLabs: `POST /v1/text-to-speech/:voice_id` (raw PCM or MP3 by `output_format`), `POST /v1/music` (MP3).
 * By default each behaves like the real API; `decide` overrides one request (an error, a hang).
 */

export interface MediaFakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** Parsed JSON, or the multipart fields (files as `{ filename, type, bytes }`). */
  body: any;
}

export type Override =
  | { kind: 'error'; status: number; body: unknown }
  /** Any bytes with any status, e.g. audio in a format the caller did not ask for. */
  | { kind: 'raw'; status: number; contentType: string; body: Buffer }
  | { kind: 'hang' }
  | { kind: 'default' };
export type MediaDecide = (request: MediaFakeRequest) => Override | Promise<Override>;

export interface MediaFake {
  origin: string;
  /** What to configure as the account's base URL. */
  baseUrl: string;
  requests: MediaFakeRequest[];
  decide(fn: MediaDecide): void;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, request: MediaFakeRequest, origin: string) => Promise<void>;

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const sendBytes = (res: ServerResponse, bytes: Buffer, contentType: string) => {
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(bytes.length) });
  res.end(bytes);
};

async function readBody(req: IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const raw = Buffer.concat(parts);
  const type = req.headers['content-type'] ?? '';
  if (raw.length === 0) return null;
  if (type.startsWith('multipart/form-data')) {
    const form = await new Response(raw, { headers: { 'content-type': type } }).formData();
    const fields: Record<string, unknown> = {};
    for (const [key, value] of form.entries()) {
      fields[key] = typeof value === 'string' ? value : { filename: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
    }
    return fields;
  }
  return JSON.parse(raw.toString('utf8'));
}

async function startFake(basePath: string, handle: Handler): Promise<MediaFake> {
  let decide: MediaDecide = () => ({ kind: 'default' });
  const requests: MediaFakeRequest[] = [];
  const sockets = new Set<Socket>();
  let origin = '';
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const request: MediaFakeRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body: await readBody(req) };
      requests.push(request);
      const override = await decide(request);
      if (override.kind === 'hang') return;
      if (override.kind === 'error') return send(res, override.status, override.body);
      if (override.kind === 'raw') {
        res.writeHead(override.status, { 'content-type': override.contentType });
        return void res.end(override.body);
      }
      await handle(req, res, request, origin);
    })().catch((err) => {
      if (!res.headersSent) send(res, 500, { error: String(err) });
      else res.end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    baseUrl: `${origin}${basePath}`,
    requests,
    decide(fn) {
      decide = fn;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A real PNG of one colour (cheap at any size). */
export function solidPng(width: number, height: number, shade = 128): Buffer {
  return encodePng(width, height, new Uint8Array(width * height * 3).fill(shade));
}

/** A real MP3 stream: an ID3v2 tag and silent MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz). */
export function silentMp3(frames = 20): Buffer {
  const id3 = Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]);
  const frame = Buffer.alloc(417);
  frame.writeUInt32BE(0xfffb9064, 0);
  return Buffer.concat([id3, ...Array.from({ length: frames }, () => frame)]);
}

// ---------------------------------------------------------------- OpenAI Images and speech

const OPENAI_SIZES: Record<string, string[]> = {
  'gpt-image-1': ['1024x1024', '1536x1024', '1024x1536', 'auto'],
  'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'],
  'dall-e-2': ['256x256', '512x512', '1024x1024'],
};
const openAiError = (message: string, param: string | null = null, code: string | null = null, type = 'invalid_request_error') => ({ error: { message, type, param, code } });

export const OPENAI_MEDIA_ERRORS = {
  401: openAiError('Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.', null, 'invalid_api_key'),
  403: openAiError('Your organization must be verified to use the model `gpt-image-1`. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization.'),
  429: openAiError('Rate limit reached for images per minute. Please try again in 12s.', null, 'rate_limit_exceeded', 'requests'),
  500: openAiError('The server had an error while processing your request. Sorry about that!', null, null, 'server_error'),
  503: openAiError('The engine is currently overloaded, please try again later.', null, null, 'server_error'),
} as const;

export interface OpenAiMediaFakeOptions {
  /** Answer every image call with `url` items instead of `b64_json` (as some compatible servers do). */
  alwaysUrl?: boolean;
}

export function startFakeOpenAiMedia(options: OpenAiMediaFakeOptions = {}): Promise<MediaFake & { downloads: () => number }> {
  let downloads = 0;
  const stored = new Map<string, Buffer>();
  return startFake('/v1', async (_req, res, request, origin) => {
    const key = request.headers.authorization?.replace(/^Bearer /, '') ?? '';
    if (request.method === 'GET' && request.path.startsWith('/files/')) {
      const bytes = stored.get(request.path.slice('/files/'.length));
      if (!bytes) return send(res, 404, { error: 'not found' });
      downloads++;
      return sendBytes(res, bytes, 'image/png');
    }
    if (!key.startsWith('sk-')) return send(res, 401, OPENAI_MEDIA_ERRORS[401]);
    if (request.method === 'GET' && request.path === '/v1/models') {
      return send(res, 200, { object: 'list', data: Object.keys(OPENAI_SIZES).map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'system' })) });
    }
    if (request.method === 'POST' && request.path === '/v1/audio/speech') {
      const body = request.body;
      if (!body?.input || !body?.voice) return send(res, 400, openAiError(`Missing required parameter: '${body?.input ? 'voice' : 'input'}'.`, body?.input ? 'voice' : 'input', 'missing_required_parameter'));
      if (body.response_format !== 'wav') return send(res, 400, openAiError('This fake only speaks WAV.', 'response_format'));
      const wav = generateSpeechWav({ text: body.input, seed: 7, voice: body.voice });
      // OpenAI streams WAV, so the header declares an unknown (maximal) length.
      wav.writeUInt32LE(0xffffffff, 4);
      wav.writeUInt32LE(0xffffffff, 40);
      return sendBytes(res, wav, 'audio/wav');
    }
    const generate = request.method === 'POST' && request.path === '/v1/images/generations';
    const edit = request.method === 'POST' && request.path === '/v1/images/edits';
    if (!generate && !edit) return send(res, 404, openAiError(`Invalid URL (${request.method} ${request.path})`));
    const body = request.body ?? {};
    const model = String(body.model ?? 'dall-e-2');
    const n = Number(body.n ?? 1);
    const size = String(body.size ?? '1024x1024');
    if (!OPENAI_SIZES[model]) return send(res, 404, openAiError(`The model \`${model}\` does not exist or you do not have access to it.`, null, 'model_not_found'));
    if (!body.prompt) return send(res, 400, openAiError("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter'));
    if (edit && !body.image) return send(res, 400, openAiError("Missing required parameter: 'image'.", 'image', 'missing_required_parameter'));
    if (edit && model === 'dall-e-3') return send(res, 400, openAiError('Image edits are not supported with dall-e-3.', 'model'));
    if (model.startsWith('gpt-image') && body.response_format !== undefined) return send(res, 400, openAiError("Unknown parameter: 'response_format'.", 'response_format', 'unknown_parameter'));
    if (!OPENAI_SIZES[model].includes(size)) {
      return send(res, 400, openAiError(`Invalid value: '${size}'. Supported values are: ${OPENAI_SIZES[model].map((s) => `'${s}'`).join(', ')}.`, 'size', 'invalid_value'));
    }
    if (model === 'dall-e-3' && n !== 1) return send(res, 400, openAiError('You must provide n=1 for this model.', 'n'));
    if (!(n >= 1 && n <= 10)) return send(res, 400, openAiError(`Invalid 'n': integer above maximum value. Expected a value <= 10, but got ${n} instead.`, 'n', 'integer_above_max_value'));
    const [width, height] = (size === 'auto' ? '1024x1024' : size).split('x').map(Number) as [number, number];
    const asUrl = options.alwaysUrl || (model.startsWith('dall-e') && body.response_format !== 'b64_json');
    const data = Array.from({ length: n }, (_, i) => {
      const png = solidPng(width, height, 40 + i * 20);
      if (!asUrl) return { b64_json: png.toString('base64') };
      const name = `img-${stored.size + 1}.png`;
      stored.set(name, png);
      return { url: `${origin}/files/${name}?se=2030-01-01&sig=SECRET`, ...(model === 'dall-e-3' ? { revised_prompt: `A detailed picture: ${body.prompt}` } : {}) };
    });
    const created = Math.floor(Date.now() / 1000);
    if (model.startsWith('gpt-image')) {
      return send(res, 200, {
        created,
        background: 'opaque',
        data,
        output_format: 'png',
        quality: 'medium',
        size,
        usage: { total_tokens: 100 * n, input_tokens: 20, output_tokens: 100 * n - 20, input_tokens_details: { text_tokens: 20, image_tokens: 0 } },
      });
    }
    return send(res, 200, { created, data });
  }).then((fake) => Object.assign(fake, { downloads: () => downloads }));
}

// ---------------------------------------------------------------- Runway

type RunwayStatus = 'PENDING' | 'THROTTLED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
interface RunwayTask {
  id: string;
  createdAt: string;
  script: RunwayStatus[];
  step: number;
  cancelled: boolean;
  failure?: { failure: string; failureCode: string };
}

const RUNWAY_RULES: Record<string, { ratios: string[]; durations: number[]; image: boolean; text: boolean }> = {
  gen4_turbo: { ratios: ['1280:720', '720:1280', '1104:832', '832:1104', '960:960', '1584:672'], durations: [5, 10], image: true, text: false },
  gen3a_turbo: { ratios: ['1280:768', '768:1280'], durations: [5, 10], image: true, text: false },
  'gen4.5': { ratios: ['1280:720', '720:1280'], durations: [2, 3, 4, 5, 6, 7, 8, 9, 10], image: true, text: true },
  veo3: { ratios: ['1280:720', '720:1280', '1080:1920', '1920:1080'], durations: [8], image: true, text: true },
};

export interface RunwayFake extends MediaFake {
  /** The statuses successive polls of new tasks report (the last one repeats). */
  setScript(script: RunwayStatus[], failure?: { failure: string; failureCode: string }): void;
  tasks: Map<string, RunwayTask>;
  /** Answer the output download with this status instead of the video. */
  setOutputStatus(status: number): void;
  downloads(): number;
}

export async function startFakeRunway(): Promise<RunwayFake> {
  const tasks = new Map<string, RunwayTask>();
  let script: RunwayStatus[] = ['PENDING', 'RUNNING', 'RUNNING', 'SUCCEEDED'];
  let failure: { failure: string; failureCode: string } | undefined;
  let outputStatus = 200;
  let downloads = 0;
  let clip: Promise<Buffer> | null = null;
  let counter = 0;
  const fake = await startFake('', async (_req, res, request, origin) => {
    const output = /^\/outputs\/([\w-]+)\.mp4$/.exec(request.path);
    if (request.method === 'GET' && output) {
      if (outputStatus !== 200 || !tasks.has(output[1]!)) return send(res, outputStatus === 200 ? 404 : outputStatus, { error: 'AccessDenied' });
      downloads++;
      clip ??= generateMp4({ prompt: 'runway fake', seed: 1, width: 64, height: 36, durationSeconds: 1, fps: 4 });
      return sendBytes(res, await clip, 'video/mp4');
    }
    if (request.headers.authorization !== 'Bearer key_valid' && !String(request.headers.authorization ?? '').startsWith('Bearer key_ok')) {
      return send(res, 401, { error: 'Invalid API key.' });
    }
    if (request.headers['x-runway-version'] !== '2024-11-06') return send(res, 400, { error: 'The X-Runway-Version header is missing or not a supported version.' });
    if (request.method === 'GET' && request.path === '/v1/organization') {
      return send(res, 200, { creditBalance: 12_000, tier: { maxMonthlyCreditSpend: 100_000, models: {} }, usage: { models: {} } });
    }
    const task = /^\/v1\/tasks\/([\w-]+)$/.exec(request.path);
    if (task) {
      const found = tasks.get(task[1]!);
      if (!found) return send(res, 404, { error: 'Task not found.' });
      if (request.method === 'DELETE') {
        found.cancelled = true;
        res.writeHead(204).end();
        return;
      }
      const status: RunwayStatus = found.cancelled ? 'CANCELLED' : found.script[Math.min(found.step, found.script.length - 1)]!;
      found.step++;
      const body: Record<string, unknown> = { id: found.id, createdAt: found.createdAt, status };
      if (status === 'RUNNING') body.progress = Math.min(0.95, Math.round(found.step * 30) / 100);
      if (status === 'SUCCEEDED') body.output = [`${origin}/outputs/${found.id}.mp4?_jwt=eyJhbGciOiJIUzI1NiJ9.SECRET`];
      if (status === 'FAILED') Object.assign(body, found.failure ?? { failure: 'An unexpected error occurred.', failureCode: 'INTERNAL' });
      return send(res, 200, body);
    }
    const imageToVideo = request.path === '/v1/image_to_video';
    if (request.method !== 'POST' || (!imageToVideo && request.path !== '/v1/text_to_video')) return send(res, 404, { error: 'Not found.' });
    const body = request.body ?? {};
    const rules = RUNWAY_RULES[body.model];
    if (!rules || (imageToVideo ? !rules.image : !rules.text)) return send(res, 400, { error: `Invalid model "${body.model}" for ${request.path}.` });
    if (!rules.ratios.includes(body.ratio)) return send(res, 400, { error: `ratio: must be one of ${rules.ratios.join(', ')}.` });
    if (!rules.durations.includes(body.duration)) return send(res, 400, { error: `duration: must be one of ${rules.durations.join(', ')}.` });
    if (!imageToVideo && (typeof body.promptText !== 'string' || !body.promptText)) return send(res, 400, { error: 'promptText: Required.' });
    if (typeof body.promptText === 'string' && body.promptText.length > 1000) return send(res, 400, { error: 'promptText: must be at most 1000 characters.' });
    if (imageToVideo) {
      const images = typeof body.promptImage === 'string' ? [{ uri: body.promptImage, position: 'first' }] : body.promptImage;
      if (!Array.isArray(images) || images.length === 0) return send(res, 400, { error: 'promptImage: Required.' });
      for (const image of images) {
        if (typeof image.uri !== 'string' || !/^(https:\/\/|data:image\/(png|jpeg|webp);base64,)/.test(image.uri)) {
          return send(res, 400, { error: 'promptImage: Invalid data URI. Data URIs must include the content type of the value they encode.' });
        }
        if (image.position === 'last' && body.model !== 'gen3a_turbo') return send(res, 400, { error: 'promptImage: position "last" is supported by gen3a_turbo only.' });
      }
    }
    const id = `a${(++counter).toString(16).padStart(7, '0')}-0000-4000-8000-${Date.now().toString(16).padStart(12, '0').slice(-12)}`;
    tasks.set(id, { id, createdAt: new Date().toISOString(), script: [...script], step: 0, cancelled: false, failure });
    return send(res, 200, { id });
  });
  return Object.assign(fake, {
    tasks,
    setScript(next: RunwayStatus[], nextFailure?: { failure: string; failureCode: string }) {
      script = next;
      failure = nextFailure;
    },
    setOutputStatus(status: number) {
      outputStatus = status;
    },
    downloads: () => downloads,
  });
}

// ---------------------------------------------------------------- ElevenLabs

export const ELEVENLABS_VOICES = ['21m00Tcm4TlvDq8ikWAM', 'EXAVITQu4vr4xnSDLpfL'];
const ELEVENLABS_SPEECH_MODELS = ['eleven_multilingual_v2', 'eleven_flash_v2_5', 'eleven_turbo_v2_5', 'eleven_v3'];
const ELEVENLABS_FORMATS = ['mp3_44100_128', 'mp3_22050_32', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100'];

export async function startFakeElevenLabs(): Promise<MediaFake> {
  return startFake('', async (_req, res, request) => {
    const key = request.headers['xi-api-key'];
    if (typeof key !== 'string' || !key.startsWith('sk_')) return send(res, 401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    if (request.method === 'GET' && request.path === '/v1/models') {
      return send(res, 200, ELEVENLABS_SPEECH_MODELS.map((model_id) => ({ model_id, name: model_id, can_do_text_to_speech: true })));
    }
    const format = request.query.get('output_format') ?? 'mp3_44100_128';
    if (!ELEVENLABS_FORMATS.includes(format)) {
      return send(res, 422, { detail: [{ type: 'enum', loc: ['query', 'output_format'], msg: `Input should be ${ELEVENLABS_FORMATS.join(', ')}` }] });
    }
    const speech = /^\/v1\/text-to-speech\/([^/]+)$/.exec(request.path);
    if (request.method === 'POST' && speech) {
      const voice = decodeURIComponent(speech[1]!);
      if (!ELEVENLABS_VOICES.includes(voice)) return send(res, 404, { detail: { status: 'voice_not_found', message: `A voice with the voice_id ${voice} was not found.` } });
      const body = request.body ?? {};
      if (typeof body.text !== 'string' || !body.text) return send(res, 422, { detail: [{ type: 'missing', loc: ['body', 'text'], msg: 'Field required' }] });
      if (body.model_id && !ELEVENLABS_SPEECH_MODELS.includes(body.model_id)) {
        return send(res, 400, { detail: { status: 'model_not_found', message: `A model with model ID ${body.model_id} does not exist.` } });
      }
      if (format.startsWith('mp3')) return sendBytes(res, silentMp3(), 'audio/mpeg');
      const rate = Number(format.slice(4));
      const wav = generateSpeechWav({ text: body.text, seed: 3, voice });
      // The fake speaks at 24 kHz; it answers only the rate it really has.
      if (rate !== 24_000) return send(res, 400, { detail: { status: 'invalid_output_format', message: 'This fake only renders pcm_24000.' } });
      return sendBytes(res, wav.subarray(44), 'audio/pcm');
    }
    if (request.method === 'POST' && request.path === '/v1/music') {
      const body = request.body ?? {};
      if (typeof body.prompt !== 'string' || !body.prompt) return send(res, 422, { detail: [{ type: 'missing', loc: ['body', 'prompt'], msg: 'Field required' }] });
      if (body.model_id !== undefined && body.model_id !== 'music_v1') return send(res, 422, { detail: [{ type: 'literal_error', loc: ['body', 'model_id'], msg: "Input should be 'music_v1'" }] });
      if (!format.startsWith('mp3')) return send(res, 403, { detail: { status: 'output_format_not_allowed', message: 'PCM output requires the Pro tier or above.' } });
      return sendBytes(res, silentMp3(60), 'audio/mpeg');
    }
    return send(res, 404, { detail: 'Not Found' });
  });
}
