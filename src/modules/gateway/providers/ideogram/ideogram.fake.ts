import { randomBytes } from 'node:crypto';
import { solidPng, type MediaFake, type MediaFakeRequest } from '../../../../../test/helpers/fake-media-upstreams.js';
import { header, isFile, startFakeServer, type FakeAnswer } from '../../../../../test/helpers/fakes/multipart-server.js';

/**
 * Ideogram 3.0 as its OpenAPI document describes it: `Api-Key` header (keys starting with `ideo-` are valid),
 * multipart generate and remix, `{ created, data: [{ url, prompt, resolution, is_image_safe, seed, style_type }] }`
 * with expiring signed URLs served by this fake, a 422 `{ error }` for a prompt that fails the safety check, and
 * problem details for the other errors (its server's format). A prompt containing "forbidden" fails the safety
 * check; "unsafe" makes the first image unsafe, "all unsafe" every image.
 */

export const IDEOGRAM_RESOLUTIONS: Record<string, string> = {
  '1x1': '1024x1024',
  '16x9': '1312x736',
  '9x16': '736x1312',
  '4x3': '1152x864',
  '3x4': '864x1152',
  '3x2': '1248x832',
  '2x3': '832x1248',
  '16x10': '1280x800',
  '10x16': '800x1280',
  '3x1': '1536x512',
  '1x3': '512x1536',
  '2x1': '1408x704',
  '1x2': '704x1408',
  '5x4': '1120x896',
  '4x5': '896x1120',
};
const RENDERING_SPEEDS = ['FLASH', 'TURBO', 'BALANCED', 'DEFAULT', 'QUALITY'];
export const IDEOGRAM_SAFETY_MESSAGE = 'Prompt provided failed safety check due to the inclusion of prohibited content.';

const problem = (status: number, title: string, detail: string): FakeAnswer => ({
  status,
  json: { detail, status, title, type: 'about:blank' },
  contentType: 'application/problem+json',
});

export interface IdeogramFake extends MediaFake {
  /** Generate and remix calls only. */
  generations(): MediaFakeRequest[];
  downloads(): number;
}

export async function startFakeIdeogram(): Promise<IdeogramFake> {
  const stored = new Map<string, { bytes: Buffer; sig: string }>();
  let downloads = 0;

  function generate(request: MediaFakeRequest, origin: string, remix: boolean): FakeAnswer {
    const body = request.body ?? {};
    if (remix && !header(request, 'content-type').startsWith('multipart/form-data')) return problem(400, 'Bad Request', 'Remix takes multipart/form-data.');
    if (typeof body.prompt !== 'string' || !body.prompt) return problem(400, 'Bad Request', "'prompt' is a required property");
    if (body.prompt.includes('forbidden')) return { status: 422, json: { error: IDEOGRAM_SAFETY_MESSAGE } };
    if (body.rendering_speed !== undefined && !RENDERING_SPEEDS.includes(body.rendering_speed))
      return problem(400, 'Bad Request', `'${body.rendering_speed}' is not one of ${JSON.stringify(RENDERING_SPEEDS)}`);
    if (body.aspect_ratio !== undefined && body.resolution !== undefined)
      return problem(400, 'Bad Request', 'aspect_ratio cannot be used in conjunction with resolution.');
    if (body.aspect_ratio !== undefined && !IDEOGRAM_RESOLUTIONS[body.aspect_ratio])
      return problem(400, 'Bad Request', `'${body.aspect_ratio}' is not one of ${JSON.stringify(Object.keys(IDEOGRAM_RESOLUTIONS))}`);
    const n = Number(body.num_images ?? 1);
    if (!(Number.isInteger(n) && n >= 1 && n <= 8)) return problem(400, 'Bad Request', `${body.num_images} is greater than the maximum of 8`);
    if (body.seed !== undefined && !(Number(body.seed) >= 0 && Number(body.seed) <= 2_147_483_647))
      return problem(400, 'Bad Request', `${body.seed} is greater than the maximum of 2147483647`);
    if (remix) {
      if (!isFile(body.image)) return problem(400, 'Bad Request', "'image' is a required property");
      if (!['image/png', 'image/jpeg', 'image/webp'].includes(body.image.type))
        return problem(400, 'Bad Request', 'Only JPEG, WebP and PNG images are supported.');
      const weight = Number(body.image_weight ?? 50);
      if (!(Number.isInteger(weight) && weight >= 1 && weight <= 100)) return problem(400, 'Bad Request', `image_weight ${body.image_weight} is outside 1-100`);
    }
    const resolution = IDEOGRAM_RESOLUTIONS[body.aspect_ratio ?? '1x1']!;
    const [width, height] = resolution.split('x').map(Number) as [number, number];
    const seed = Number(body.seed ?? 4242);
    const data = Array.from({ length: n }, (_, i) => {
      const safe = !(body.prompt.includes('all unsafe') || (body.prompt.includes('unsafe') && i === 0));
      let url: string | null = null;
      if (safe) {
        const id = randomBytes(9).toString('base64url');
        const sig = randomBytes(16).toString('hex');
        stored.set(id, { bytes: solidPng(width / 16, height / 16, 60 + i * 30), sig });
        url = `${origin}/api/images/ephemeral/${id}.png?exp=${Math.floor(Date.now() / 1000) + 3600}&sig=${sig}`;
      }
      return { url, prompt: body.prompt, resolution, is_image_safe: safe, seed: seed + i, style_type: 'GENERAL' };
    });
    return { status: 200, json: { created: new Date().toISOString(), data } };
  }

  const fake = await startFakeServer((request, origin) => {
    const file = /^\/api\/images\/ephemeral\/([\w-]+)\.png$/.exec(request.path);
    if (request.method === 'GET' && file) {
      const found = stored.get(file[1]!);
      if (!found || request.query.get('sig') !== found.sig) return { status: 403, bytes: Buffer.from('Forbidden'), contentType: 'text/plain' };
      downloads++;
      return { status: 200, bytes: found.bytes, contentType: 'image/png' };
    }
    if (!header(request, 'api-key').startsWith('ideo-')) return problem(401, 'Unauthorized', 'Not authorized to generate an image.');
    if (request.method === 'GET' && request.path === '/models') return { status: 200, json: { models: [] } };
    if (request.method === 'POST' && request.path === '/v1/ideogram-v3/generate') return generate(request, origin, false);
    if (request.method === 'POST' && request.path === '/v1/ideogram-v3/remix') return generate(request, origin, true);
    return problem(404, 'Not Found', 'The requested URL was not found on the server.');
  });
  return Object.assign(fake, {
    generations: () => fake.requests.filter((r) => r.method === 'POST'),
    downloads: () => downloads,
  });
}
