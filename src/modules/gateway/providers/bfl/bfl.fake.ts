import { solidPng, type MediaFake } from '../../../../../test/helpers/fake-media-upstreams.js';
import { sendBytes, sendJson, startFakeServer } from '../../../../../test/helpers/fakes/server.js';

/**
 * Black Forest Labs' API as https://api.bfl.ai/openapi.json describes it: `POST /v1/{model}` with `x-key` ->
 * `{ id, polling_url, cost }`; `GET /v1/get_result?id=` walks each task through a script of statuses (`Pending`,
 * `Ready`, `Request Moderated`, `Content Moderated`, `Error`); `GET /v1/credits`; signed delivery URLs. Inputs are
 * checked as the schema does (sizes in multiples of 32 within 256-1440, ratios between 21:9 and 9:21, base64
 * images without a data: prefix, safety tolerance 0-6) and refused with FastAPI's 422 `{ detail: [...] }`.
 */

export const BFL_KEYS = ['bfl_key_alpha', 'bfl_key_bravo'];
export const BFL_AUTH_ERROR = { detail: 'Not authenticated - Invalid Authentication' };

type BflStatus = 'Pending' | 'Ready' | 'Request Moderated' | 'Content Moderated' | 'Error';
interface BflTask {
  id: string;
  model: string;
  body: Record<string, any>;
  script: BflStatus[];
  step: number;
}

const SIZED = ['flux-pro-1.1', 'flux-dev'];
const RATIOED = ['flux-pro-1.1-ultra', 'flux-kontext-pro', 'flux-kontext-max'];
const COSTS: Record<string, number> = { 'flux-pro-1.1': 4, 'flux-pro-1.1-ultra': 6, 'flux-dev': 2.5, 'flux-kontext-pro': 4, 'flux-kontext-max': 8 };

export interface BflFake extends MediaFake {
  tasks: Map<string, BflTask>;
  /** The statuses successive reads of new tasks report (the last one repeats). */
  setScript(script: BflStatus[]): void;
  /** Keys BFL rejects from now on (a revoked key), until `restoreKeys`. */
  revoke(...keys: string[]): void;
  restoreKeys(): void;
  /** Answer downloads of results with this status (403: the signed URL expired). */
  setDeliveryStatus(status: number): void;
  downloads(): number;
}

const invalid = (field: string, msg: string, type = 'value_error') => ({ detail: [{ loc: ['body', field], msg, type }] });

function validate(model: string, body: Record<string, any>): object | null {
  if (typeof body.prompt !== 'string' || (!body.prompt && !body.input_image)) return invalid('prompt', 'Field required', 'missing');
  if (SIZED.includes(model)) {
    for (const field of ['width', 'height']) {
      const value = body[field];
      if (value === undefined) continue;
      if (!Number.isInteger(value) || value < 256 || value > 1440) return invalid(field, 'Input should be between 256 and 1440', 'less_than_equal');
      if (value % 32 !== 0) return invalid(field, 'Input should be a multiple of 32', 'multiple_of');
    }
    if (body.aspect_ratio !== undefined) return invalid('aspect_ratio', 'Extra inputs are not permitted', 'extra_forbidden');
  } else {
    const match = typeof body.aspect_ratio === 'string' ? /^(\d+):(\d+)$/.exec(body.aspect_ratio) : null;
    if (
      body.aspect_ratio !== undefined &&
      (!match || Number(match[1]) / Number(match[2]) > 21 / 9 + 1e-9 || Number(match[1]) / Number(match[2]) < 9 / 21 - 1e-9)
    ) {
      return invalid('aspect_ratio', 'Aspect ratio must be between 21:9 and 9:21');
    }
  }
  if (body.safety_tolerance !== undefined && (!Number.isInteger(body.safety_tolerance) || body.safety_tolerance < 0 || body.safety_tolerance > 6)) {
    return invalid('safety_tolerance', 'Input should be less than or equal to 6', 'less_than_equal');
  }
  if (body.output_format !== undefined && !['jpeg', 'png', 'webp'].includes(body.output_format))
    return invalid('output_format', "Input should be 'jpeg', 'png' or 'webp'", 'enum');
  if (body.seed !== undefined && !Number.isInteger(body.seed)) return invalid('seed', 'Input should be a valid integer', 'int_type');
  for (const field of ['input_image', 'image_prompt']) {
    const value = body[field];
    if (value === undefined) continue;
    const bytes = typeof value === 'string' && !value.startsWith('data:') ? Buffer.from(value, 'base64') : Buffer.alloc(0);
    if (bytes.length < 4 || (bytes.readUInt32BE(0) !== 0x89504e47 && bytes.readUInt16BE(0) !== 0xffd8)) {
      return invalid(field, 'Invalid image: expected a base64-encoded PNG or JPEG or a URL');
    }
  }
  if (body.input_image !== undefined && !model.includes('kontext')) return invalid('input_image', 'Extra inputs are not permitted', 'extra_forbidden');
  return null;
}

export async function startFakeBfl(options: { keys?: string[] } = {}): Promise<BflFake> {
  const configured = options.keys ?? BFL_KEYS;
  const keys = new Set(configured);
  const tasks = new Map<string, BflTask>();
  let script: BflStatus[] = ['Pending', 'Ready'];
  let deliveryStatus = 200;
  let downloads = 0;
  let counter = 0;
  const fake = await startFakeServer((request, res, origin) => {
    const delivery = /^\/delivery\/([\w-]+)\.png$/.exec(request.path);
    if (request.method === 'GET' && delivery) {
      const task = tasks.get(delivery[1]!);
      if (!task || deliveryStatus !== 200 || !request.query.get('sig')) return sendJson(res, task ? deliveryStatus : 404, { error: 'AuthenticationFailed' });
      downloads++;
      const width = task.body.width ?? 64;
      const height = task.body.height ?? 64;
      return sendBytes(res, solidPng(Math.min(width, 64), Math.min(height, 64)), 'image/png');
    }
    const key = request.headers['x-key'];
    // Reading a result needs no key at BFL, but a key that is sent must be a valid one.
    const keyOk = typeof key === 'string' && keys.has(key);
    if (request.method === 'GET' && request.path === '/v1/get_result') {
      if (key !== undefined && !keyOk) return sendJson(res, 403, BFL_AUTH_ERROR);
      const id = request.query.get('id') ?? '';
      const task = tasks.get(id);
      if (!task) return sendJson(res, 404, { id, status: 'Task not found', result: null, progress: null });
      const status = task.script[Math.min(task.step, task.script.length - 1)]!;
      task.step++;
      const sample = `${origin}/delivery/${id}.png?se=2030-01-01T00%3A00%3A00Z&sp=r&sv=2024-08-04&sr=b&sig=SECRETSIGNATURE`;
      return sendJson(res, 200, {
        id,
        status,
        result: status === 'Ready' ? { sample, prompt: task.body.prompt, seed: task.body.seed ?? 1234, start_time: 1, end_time: 2, duration: 1 } : null,
        progress: status === 'Pending' ? Math.min(0.9, task.step * 0.3) : null,
        details: null,
        preview: null,
      });
    }
    if (!keyOk) return sendJson(res, 403, BFL_AUTH_ERROR);
    if (request.method === 'GET' && request.path === '/v1/credits') return sendJson(res, 200, { credits: 1234.5 });
    const model = /^\/v1\/([\w.-]+)$/.exec(request.path)?.[1] ?? '';
    if (request.method !== 'POST' || ![...SIZED, ...RATIOED].includes(model)) return sendJson(res, 404, { detail: 'Not Found' });
    const body = (request.body ?? {}) as Record<string, any>;
    const refusal = validate(model, body);
    if (refusal) return sendJson(res, 422, refusal);
    const id = `${(++counter).toString(16).padStart(8, '0')}-bf1a-4c0d-9e2f-${Date.now().toString(16).padStart(12, '0').slice(-12)}`;
    tasks.set(id, { id, model, body, script: [...script], step: 0 });
    return sendJson(res, 200, { id, polling_url: `${origin}/v1/get_result?id=${id}`, cost: COSTS[model], input_mp: 0, output_mp: 1 });
  });
  return Object.assign(fake, {
    tasks,
    setScript(next: BflStatus[]) {
      script = next;
    },
    revoke(...revoked: string[]) {
      for (const key of revoked) keys.delete(key);
    },
    restoreKeys() {
      for (const key of configured) keys.add(key);
    },
    setDeliveryStatus(status: number) {
      deliveryStatus = status;
    },
    downloads: () => downloads,
  });
}
