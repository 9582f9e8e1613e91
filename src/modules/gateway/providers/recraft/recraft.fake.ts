import { randomUUID } from 'node:crypto';
import { solidPng, type MediaFake, type MediaFakeRequest } from '../../../../../test/helpers/fake-media-upstreams.js';
import { header, isFile, startFakeServer, type FakeAnswer } from '../../../../../test/helpers/fakes/multipart-server.js';

/**
 * Recraft's external API as its OpenAPI document and docs describe it: `authorization: Bearer` (tokens starting with
 * `rc-` are valid; others get the documented `text/plain` "request unauthorized"), JSON generations with the V3 size
 * menu, styles and `n` 1-6, multipart imageToImage with a required strength, `{ created, credits, data: [{ image_id,
 * url | b64_json }] }`, and files served from this fake (SVG for vector styles and models, PNG otherwise).
 * Recraft does not document the body of a refused prompt ("the body explains the error; JSON or text"): this fake
 * answers a prompt containing "forbidden" with a 400 JSON `{ code, message }`.
 */

export const RECRAFT_V3_SIZES = [
  '1024x1024',
  '1365x1024',
  '1024x1365',
  '1536x1024',
  '1024x1536',
  '1820x1024',
  '1024x1820',
  '1024x2048',
  '2048x1024',
  '1434x1024',
  '1024x1434',
  '1024x1280',
  '1280x1024',
  '1024x1707',
  '1707x1024',
];
const STYLES: Record<string, string[]> = {
  recraftv3: ['any', 'realistic_image', 'digital_illustration', 'vector_illustration', 'logo_raster'],
  recraftv2: ['any', 'realistic_image', 'digital_illustration', 'vector_illustration', 'icon'],
};
const UNSTYLED_MODELS = ['recraftv3_vector', 'recraftv4', 'recraftv4_vector'];
export const RECRAFT_REFUSAL = { code: 'prompt_rejected', message: 'The prompt was rejected by the content filter. Rephrase it and try again.' };

const text = (status: number, body: string): FakeAnswer => ({ status, bytes: Buffer.from(body), contentType: 'text/plain; charset=utf-8' });
const invalid = (message: string): FakeAnswer => ({ status: 400, json: { code: 'invalid_request', message } });

export const svgOf = (width: number, height: number, fill: string) =>
  Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><rect width="100%" height="100%" fill="${fill}"/></svg>`,
  );

export interface RecraftFake extends MediaFake {
  generations(): MediaFakeRequest[];
  downloads(): number;
}

export async function startFakeRecraft(): Promise<RecraftFake> {
  const stored = new Map<string, { bytes: Buffer; type: string }>();
  let downloads = 0;

  function generate(request: MediaFakeRequest, origin: string, imageToImage: boolean): FakeAnswer {
    const body = request.body ?? {};
    const multipart = header(request, 'content-type').startsWith('multipart/form-data');
    if (imageToImage && !multipart) return invalid('imageToImage takes multipart/form-data with the image file');
    if (typeof body.prompt !== 'string' || !body.prompt) return invalid('prompt is required');
    if (body.prompt.length > 1000) return invalid('prompt is longer than 1000 characters');
    if (body.prompt.includes('forbidden')) return { status: 400, json: RECRAFT_REFUSAL };
    const model = String(body.model ?? 'recraftv3');
    if (!STYLES[model] && !UNSTYLED_MODELS.includes(model)) return invalid(`unknown model ${model}`);
    if (body.style !== undefined && !(STYLES[model] ?? []).includes(body.style)) return invalid(`style ${body.style} is not supported by ${model}`);
    if (body.negative_prompt !== undefined && !STYLES[model]) return invalid(`negative_prompt is not supported by ${model}`);
    const n = Number(body.n ?? 1);
    if (!(Number.isInteger(n) && n >= 1 && n <= 6)) return invalid('n must be between 1 and 6');
    if (body.random_seed !== undefined && !(Number(body.random_seed) >= 0 && Number(body.random_seed) <= 4_294_967_295))
      return invalid('random_seed must be a uint32');
    const format = body.response_format ?? 'url';
    if (!['url', 'b64_json'].includes(format)) return invalid(`response_format must be url or b64_json`);
    if (imageToImage) {
      if (body.size !== undefined) return invalid('size is not a field of imageToImage');
      if (!isFile(body.image)) return invalid('image is required');
      if (!['image/png', 'image/jpeg', 'image/webp', 'image/svg+xml'].includes(body.image.type)) return invalid('image must be PNG, JPG, WEBP or SVG');
      const strength = Number(body.strength);
      if (body.strength === undefined || !(strength >= 0 && strength <= 1)) return invalid('strength must be in [0, 1]');
    } else if (!RECRAFT_V3_SIZES.includes(body.size ?? '1024x1024')) {
      return invalid(`size ${body.size} is not supported by ${model}`);
    }
    const [width, height] = String(body.size ?? '1024x1024')
      .split('x')
      .map(Number) as [number, number];
    const vector = body.style === 'vector_illustration' || model.endsWith('_vector');
    const data = Array.from({ length: n }, (_, i) => {
      const image_id = randomUUID();
      const bytes = vector
        ? svgOf(width, height, ['#e4572e', '#29335c', '#f3a712'][i % 3]!)
        : solidPng(Math.round(width / 16), Math.round(height / 16), 50 + i * 30);
      if (format === 'b64_json') return { image_id, b64_json: bytes.toString('base64') };
      stored.set(image_id, { bytes, type: vector ? 'image/svg+xml' : 'image/png' });
      return { image_id, url: `${origin}/files/${image_id}.${vector ? 'svg' : 'png'}` };
    });
    return { status: 200, json: { created: Math.floor(Date.now() / 1000), credits: n * (vector ? 80 : 40), data } };
  }

  const fake = await startFakeServer((request, origin) => {
    const file = /^\/files\/([\w-]+)\.(svg|png)$/.exec(request.path);
    if (request.method === 'GET' && file) {
      const found = stored.get(file[1]!);
      if (!found) return text(404, '404 page not found');
      downloads++;
      return { status: 200, bytes: found.bytes, contentType: found.type };
    }
    if (!/^Bearer rc-\w+/.test(header(request, 'authorization'))) return text(401, 'request unauthorized');
    if (request.method === 'GET' && request.path === '/v1/users/me')
      return { status: 200, json: { id: randomUUID(), credits: 5000, email: 'ops@example.com', name: 'Storefront' } };
    if (request.method === 'POST' && request.path === '/v1/images/generations') return generate(request, origin, false);
    if (request.method === 'POST' && request.path === '/v1/images/imageToImage') return generate(request, origin, true);
    return text(404, '404 page not found');
  });
  return Object.assign(fake, {
    generations: () => fake.requests.filter((r) => r.method === 'POST'),
    downloads: () => downloads,
  });
}
