import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { MediaFake } from '../../../../../test/helpers/fake-media-upstreams.js';
import { fakeClip, numericIds, sendBytes, sendJson, startFakeServer } from '../../../../../test/helpers/fakes/server.js';

/**
 * Kling AI's API as its documentation describes it: every call authenticated by an HS256 JWT (`iss` = access key,
 * signed with the secret key, `nbf`/`exp` checked) answering the documented codes 1000-1004 when it is missing,
 * forged or outside its validity; `POST /v1/videos/text2video` and `/image2video` with their parameters checked
 * (model per endpoint, duration "5"|"10", ratios, base64 images without a data: prefix, the mutually exclusive
 * frame / motion brush / camera options); tasks walked through a script (submitted, processing, succeed, failed) and
 * read at `GET /v1/videos/{endpoint}/{task_id}`; the task list (`?pageNum&pageSize`); video downloads.
 */

export const KLING_ACCOUNTS: Record<string, string> = { AKalpha0001: 'SKalpha-secret-0001', AKbravo0002: 'SKbravo-secret-0002' };
/** The `KLING_API_KEY` value of accounts: `<access key>:<secret key>`, comma-separated. */
export const klingApiKey = (...accessKeys: string[]) => accessKeys.map((ak) => `${ak}:${KLING_ACCOUNTS[ak]}`).join(',');
/** A prompt containing this word trips Kling's content check at submit (code 1301). */
export const KLING_FORBIDDEN_WORD = 'forbidden-scene';

type KlingStatus = 'submitted' | 'processing' | 'succeed' | 'failed';
interface KlingTask {
  id: string;
  endpoint: 'text2video' | 'image2video';
  accessKey: string;
  body: Record<string, any>;
  script: KlingStatus[];
  step: number;
  failure: string;
  createdAt: number;
}

const TEXT_MODELS = ['kling-v1', 'kling-v1-6', 'kling-v2-master', 'kling-v2-1-master', 'kling-v2-5-turbo', 'kling-v2-6'];
const IMAGE_MODELS = ['kling-v1', 'kling-v1-5', 'kling-v1-6', 'kling-v2-master', 'kling-v2-1', 'kling-v2-1-master', 'kling-v2-5-turbo', 'kling-v2-6'];

export interface KlingFake extends MediaFake {
  tasks: Map<string, KlingTask>;
  /** Statuses successive reads of new tasks report (the last repeats), and the message of a failed one. */
  setScript(script: KlingStatus[], failure?: string): void;
  /** Access keys Kling rejects from now on (code 1002), until `restoreKeys`. */
  revoke(...accessKeys: string[]): void;
  restoreKeys(): void;
  /** The access key (`iss`) of each authenticated call, in order. */
  callers(): string[];
  downloads(): number;
}

const b64json = (part: string): any => {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
};

/** Kling's check of the Authorization header: null when it is good, else the documented code and message. */
function verifyJwt(headers: IncomingHttpHeaders, keys: Map<string, string>): { issuer: string } | { code: number; message: string } {
  const header = headers.authorization;
  if (!header) return { code: 1001, message: 'Authorization is empty' };
  const token = /^Bearer (.+)$/.exec(header)?.[1];
  const [head, payload, signature] = token?.split('.') ?? [];
  const claims = payload ? b64json(payload) : null;
  const meta = head ? b64json(head) : null;
  const secret = typeof claims?.iss === 'string' ? keys.get(claims.iss) : undefined;
  if (!secret || meta?.alg !== 'HS256' || !signature) return { code: 1002, message: 'Authorization is invalid' };
  const expected = createHmac('sha256', secret).update(`${head}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { code: 1002, message: 'Authorization is invalid' };
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.nbf !== 'number' || claims.nbf > now) return { code: 1003, message: 'Authorization is not yet valid' };
  if (typeof claims.exp !== 'number' || claims.exp <= now) return { code: 1004, message: 'Authorization has expired' };
  return { issuer: claims.iss };
}

/** A URL, or base64 of a JPG or PNG without a data: prefix. */
const isBase64Image = (value: unknown) => {
  if (typeof value !== 'string' || value.startsWith('data:')) return false;
  if (value.startsWith('https://')) return true;
  const bytes = Buffer.from(value, 'base64');
  return bytes.length > 4 && (bytes.readUInt32BE(0) === 0x89504e47 || bytes.readUInt16BE(0) === 0xffd8);
};

/** The documented parameter rules of both create endpoints: null when the body is acceptable. */
function invalidParam(endpoint: KlingTask['endpoint'], body: Record<string, any>): string | null {
  const models = endpoint === 'text2video' ? TEXT_MODELS : IMAGE_MODELS;
  if (!models.includes(body.model_name ?? 'kling-v1')) return `model_name ${body.model_name} is not supported by ${endpoint}`;
  if (endpoint === 'text2video' && (typeof body.prompt !== 'string' || !body.prompt)) return 'prompt is required';
  if (typeof body.prompt === 'string' && body.prompt.length > 2500) return 'prompt cannot exceed 2500 characters';
  if (body.duration !== undefined && body.duration !== '5' && body.duration !== '10') return 'duration must be "5" or "10"';
  if (body.mode !== undefined && body.mode !== 'std' && body.mode !== 'pro') return 'mode must be std or pro';
  if (body.cfg_scale !== undefined && !(typeof body.cfg_scale === 'number' && body.cfg_scale >= 0 && body.cfg_scale <= 1)) return 'cfg_scale must be in [0, 1]';
  if (body.aspect_ratio !== undefined && !['16:9', '9:16', '1:1'].includes(body.aspect_ratio)) return 'aspect_ratio must be one of 16:9, 9:16, 1:1';
  if (body.camera_control !== undefined && typeof body.camera_control?.type !== 'string') return 'camera_control.type is required';
  if (endpoint === 'image2video') {
    if (!isBase64Image(body.image)) return 'image is invalid: base64 without the data: prefix, or a URL';
    if (body.image_tail !== undefined && !isBase64Image(body.image_tail)) return 'image_tail is invalid';
    const options = [body.image_tail !== undefined, body.static_mask !== undefined || body.dynamic_masks !== undefined, body.camera_control !== undefined];
    if (options.filter(Boolean).length > 1) return 'image_tail, static_mask/dynamic_masks and camera_control cannot be used together';
    if (body.dynamic_masks !== undefined && !Array.isArray(body.dynamic_masks)) return 'dynamic_masks must be an array';
    if (body.image_tail !== undefined && body.model_name === 'kling-v2-1' && body.mode !== 'pro') return 'image_tail is supported in pro mode only';
  } else if (body.image !== undefined || body.image_tail !== undefined) return 'image is not a parameter of text2video';
  else if (body.static_mask !== undefined || body.dynamic_masks !== undefined) return 'static_mask and dynamic_masks are parameters of image2video';
  return null;
}

export async function startFakeKling(accounts: Record<string, string> = KLING_ACCOUNTS): Promise<KlingFake> {
  const keys = new Map(Object.entries(accounts));
  const tasks = new Map<string, KlingTask>();
  const callers: string[] = [];
  let script: KlingStatus[] = ['submitted', 'processing', 'processing', 'succeed'];
  let failure = 'Failure to pass the risk control system';
  let downloads = 0;
  const nextId = numericIds(781_263_451_000_000_000);
  const reply = (code: number, message: string, data?: unknown) => ({ code, message, request_id: randomUUID(), ...(data === undefined ? {} : { data }) });

  const fake = await startFakeServer(async (request, res, origin) => {
    const output = /^\/outputs\/(\d+)\.mp4$/.exec(request.path);
    if (request.method === 'GET' && output) {
      if (!tasks.has(output[1]!)) return sendJson(res, 404, { error: 'NoSuchKey' });
      downloads++;
      return sendBytes(res, await fakeClip(), 'video/mp4');
    }
    const auth = verifyJwt(request.headers, keys);
    if ('code' in auth) return sendJson(res, 401, reply(auth.code, auth.message));
    callers.push(auth.issuer);
    const route = /^\/v1\/videos\/(text2video|image2video)(?:\/([^/]+))?$/.exec(request.path);
    if (!route) return sendJson(res, 404, reply(1202, 'Invalid request method or path'));
    const endpoint = route[1] as KlingTask['endpoint'];
    if (request.method === 'GET' && !route[2]) {
      const mine = [...tasks.values()].filter((t) => t.endpoint === endpoint && t.accessKey === auth.issuer);
      return sendJson(
        res,
        200,
        reply(
          0,
          'SUCCEED',
          mine.slice(0, Number(request.query.get('pageSize') ?? 30)).map((t) => ({ task_id: t.id, task_status: t.script[0] })),
        ),
      );
    }
    if (request.method === 'GET') {
      const task = tasks.get(decodeURIComponent(route[2]!));
      if (!task || task.endpoint !== endpoint || task.accessKey !== auth.issuer) return sendJson(res, 404, reply(1203, 'task not found'));
      const status = task.script[Math.min(task.step, task.script.length - 1)]!;
      task.step++;
      return sendJson(
        res,
        200,
        reply(0, 'SUCCEED', {
          task_id: task.id,
          task_status: status,
          task_status_msg: status === 'failed' ? task.failure : '',
          task_info: {},
          created_at: task.createdAt,
          updated_at: Date.now(),
          ...(status === 'succeed'
            ? {
                final_unit_deduction: '2',
                task_result: { videos: [{ id: `v-${task.id}`, url: `${origin}/outputs/${task.id}.mp4`, duration: task.body.duration ?? '5' }] },
              }
            : {}),
        }),
      );
    }
    if (request.method !== 'POST' || route[2]) return sendJson(res, 404, reply(1202, 'Invalid request method or path'));
    const body = (request.body ?? {}) as Record<string, any>;
    const problem = invalidParam(endpoint, body);
    if (problem) return sendJson(res, 400, reply(1201, `Invalid request parameters: ${problem}`));
    if (typeof body.prompt === 'string' && body.prompt.includes(KLING_FORBIDDEN_WORD))
      return sendJson(res, 400, reply(1301, 'Trigger the content security policy of the platform, please modify the input'));
    const id = nextId();
    tasks.set(id, { id, endpoint, accessKey: auth.issuer, body, script: [...script], step: 0, failure, createdAt: Date.now() });
    return sendJson(res, 200, reply(0, 'SUCCEED', { task_id: id, task_status: 'submitted', task_info: {}, created_at: Date.now(), updated_at: Date.now() }));
  });
  return Object.assign(fake, {
    tasks,
    setScript(next: KlingStatus[], nextFailure?: string) {
      script = next;
      if (nextFailure) failure = nextFailure;
    },
    revoke(...accessKeys: string[]) {
      for (const ak of accessKeys) keys.delete(ak);
    },
    restoreKeys() {
      for (const [ak, sk] of Object.entries(accounts)) keys.set(ak, sk);
    },
    callers: () => [...callers],
    downloads: () => downloads,
  });
}
