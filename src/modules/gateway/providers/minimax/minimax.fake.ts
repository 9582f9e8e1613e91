import type { MediaFake } from '../../../../../test/helpers/fake-media-upstreams.js';
import { fakeClip, numericIds, sendBytes, sendJson, startFakeServer } from '../../../../../test/helpers/fakes/server.js';

/**
 * MiniMax's video API as https://platform.minimax.io/docs describes it: Bearer keys; errors as HTTP 200 with a non-zero
 * `base_resp.status_code` (1004 no key, 2049 invalid key, 2013 invalid parameters, 1026 sensitive input);
 * `POST /v1/video_generation` with the Hailuo-02 rules checked (durations 6|10, the resolutions of text, start-frame
 * and end-frame videos, 1080P only for 6 s, images as data: or https URLs); tasks walked through a script of statuses
 * (Preparing, Queueing, Processing, Success, Fail) at `GET /v1/query/video_generation`; `GET /v1/files/retrieve` with a
 * signed download URL; `GET /v1/files/list`; the download itself.
 */

export const MINIMAX_KEYS = ['mm-key-alpha-0001', 'mm-key-bravo-0002'];
/** A prompt containing this word is refused at submit as sensitive input (1026). */
export const MINIMAX_SENSITIVE_WORD = 'sensitive-scene';

type MinimaxStatus = 'Preparing' | 'Queueing' | 'Processing' | 'Success' | 'Fail';
interface MinimaxTask {
  id: string;
  key: string;
  body: Record<string, any>;
  script: MinimaxStatus[];
  step: number;
  failure: { status_code: number; status_msg: string };
  fileId: string;
}

const ok = { status_code: 0, status_msg: 'success' };
const fail = (status_code: number, status_msg: string) => ({ base_resp: { status_code, status_msg } });
const MODELS = ['MiniMax-Hailuo-02', 'MiniMax-Hailuo-2.3', 'T2V-01', 'T2V-01-Director', 'I2V-01', 'I2V-01-Director', 'I2V-01-live'];

/** Hailuo-02's documented resolution and duration rules; null when the body is acceptable. */
function invalidParams(body: Record<string, any>): string | null {
  if (!MODELS.includes(body.model)) return `invalid params, model ${body.model} is not supported`;
  const image = (value: unknown) => typeof value === 'string' && (value.startsWith('https://') || /^data:image\/(jpeg|png|webp);base64,/.test(value));
  if (body.first_frame_image !== undefined && !image(body.first_frame_image)) return 'invalid params, invalid image url';
  if (body.last_frame_image !== undefined && !image(body.last_frame_image)) return 'invalid params, invalid image url';
  if (body.first_frame_image === undefined && body.last_frame_image === undefined && !body.prompt) return 'invalid params, prompt is required';
  if (typeof body.prompt === 'string' && body.prompt.length > 2000) return 'invalid params, prompt exceeds 2000 characters';
  if (body.duration !== undefined && body.duration !== 6 && body.duration !== 10) return 'invalid params, duration must be 6 or 10';
  if (body.model !== 'MiniMax-Hailuo-02') return null;
  const resolution = body.resolution ?? '768P';
  const allowed =
    body.last_frame_image !== undefined ? ['768P', '1080P'] : body.first_frame_image !== undefined ? ['512P', '768P', '1080P'] : ['768P', '1080P'];
  if (!allowed.includes(resolution)) return `invalid params, resolution ${resolution} is not supported for this mode`;
  if (resolution === '1080P' && body.duration === 10) return 'invalid params, 1080P supports 6s only';
  return null;
}

export interface MinimaxFake extends MediaFake {
  tasks: Map<string, MinimaxTask>;
  /** Statuses successive reads of new tasks report (the last repeats), and the `base_resp` of a failed one. */
  setScript(script: MinimaxStatus[], failure?: { status_code: number; status_msg: string }): void;
  revoke(...keys: string[]): void;
  restoreKeys(): void;
  downloads(): number;
}

export async function startFakeMinimax(configured: string[] = MINIMAX_KEYS): Promise<MinimaxFake> {
  const keys = new Set(configured);
  const tasks = new Map<string, MinimaxTask>();
  const files = new Map<string, MinimaxTask>();
  let script: MinimaxStatus[] = ['Preparing', 'Queueing', 'Processing', 'Success'];
  let failure = { status_code: 1027, status_msg: 'output new_sensitive' };
  let downloads = 0;
  const taskIds = numericIds(106_916_112_212_032);
  const fileIds = numericIds(205_258_526_306_433);

  const fake = await startFakeServer(async (request, res, origin) => {
    const download = /^\/download\/(\d+)\.mp4$/.exec(request.path);
    if (request.method === 'GET' && download) {
      if (!files.has(download[1]!) || !request.query.get('Signature')) return sendJson(res, 403, { Code: 'AccessDenied' });
      downloads++;
      return sendBytes(res, await fakeClip(), 'video/mp4');
    }
    const key = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!key) return sendJson(res, 200, fail(1004, "login fail: Please carry the API secret key in the 'Authorization' field of the request header"));
    if (!keys.has(key)) return sendJson(res, 200, fail(2049, 'invalid api key'));
    const route = `${request.method} ${request.path}`;
    if (route === 'GET /v1/files/list') return sendJson(res, 200, { files: [], base_resp: ok });
    if (route === 'GET /v1/files/retrieve') {
      const task = files.get(request.query.get('file_id') ?? '');
      if (!task || task.key !== key) return sendJson(res, 200, fail(2013, 'invalid params, file not found'));
      const url = `${origin}/download/${task.fileId}.mp4?Expires=1900000000&OSSAccessKeyId=LTAI5tFAKEFAKE&Signature=SECRETSIG%3D`;
      return sendJson(res, 200, {
        file: {
          file_id: Number(task.fileId),
          bytes: 5_896_337,
          created_at: 1_700_469_398,
          filename: 'output_aigc.mp4',
          purpose: 'video_generation',
          download_url: url,
        },
        base_resp: ok,
      });
    }
    if (route === 'GET /v1/query/video_generation') {
      const task = tasks.get(request.query.get('task_id') ?? '');
      if (!task || task.key !== key) return sendJson(res, 200, { task_id: '', status: '', file_id: '', ...fail(2013, 'invalid params, task not found') });
      const status = task.script[Math.min(task.step, task.script.length - 1)]!;
      task.step++;
      if (status === 'Success') files.set(task.fileId, task);
      const done = status === 'Success' ? { file_id: task.fileId, video_width: 1366, video_height: 768 } : { file_id: '' };
      return sendJson(res, 200, { task_id: task.id, status, ...done, base_resp: status === 'Fail' ? task.failure : ok });
    }
    if (route !== 'POST /v1/video_generation') return sendJson(res, 404, { base_resp: { status_code: 404, status_msg: 'not found' } });
    const body = (request.body ?? {}) as Record<string, any>;
    const problem = invalidParams(body);
    if (problem) return sendJson(res, 200, { task_id: '', ...fail(2013, problem) });
    if (typeof body.prompt === 'string' && body.prompt.includes(MINIMAX_SENSITIVE_WORD))
      return sendJson(res, 200, { task_id: '', ...fail(1026, 'input new_sensitive') });
    const id = taskIds();
    tasks.set(id, { id, key, body, script: [...script], step: 0, failure, fileId: fileIds() });
    return sendJson(res, 200, { task_id: id, base_resp: ok });
  });
  return Object.assign(fake, {
    tasks,
    setScript(next: MinimaxStatus[], nextFailure?: { status_code: number; status_msg: string }) {
      script = next;
      if (nextFailure) failure = nextFailure;
    },
    revoke(...revoked: string[]) {
      for (const key of revoked) keys.delete(key);
    },
    restoreKeys() {
      for (const key of configured) keys.add(key);
    },
    downloads: () => downloads,
  });
}
