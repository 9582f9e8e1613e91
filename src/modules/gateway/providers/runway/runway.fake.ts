import { generateMp4 } from '../../../../platform/media/video.js';
import { send, sendBytes, startFake, type MediaFake } from '../../../../../test/helpers/fakes/media-server.js';

/**
 * Runway's API: `POST /v1/image_to_video` / `/v1/text_to_video` -> `{ id }`, `GET`/`DELETE /v1/tasks/:id`, signed
 * output URLs. By default it behaves like the real API; `decide` overrides one request (an error, a hang).
 */

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
    if (request.headers['x-runway-version'] !== '2024-11-06')
      return send(res, 400, { error: 'The X-Runway-Version header is missing or not a supported version.' });
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
        if (image.position === 'last' && body.model !== 'gen3a_turbo')
          return send(res, 400, { error: 'promptImage: position "last" is supported by gen3a_turbo only.' });
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
