import type { GenerationKind } from '../../src/db/schema/library.js';
import { bearer, json, signUp, type TestApp } from './test-app.js';

export interface Member {
  id: string;
  handle: string;
  email: string;
  password: string;
  accessToken: string;
  headers: { authorization: string };
}

/** Signs a user up and returns their tokens with id, handle and ready-made headers. */
export async function member(t: TestApp, name = 'Member'): Promise<Member> {
  const session = await signUp(t.app, { name });
  const user = session.user as { id: string; handle: string };
  return {
    id: user.id,
    handle: user.handle,
    email: session.email,
    password: session.password,
    accessToken: session.accessToken as string,
    headers: bearer(session.accessToken as string),
  };
}

const OUTPUTS: Record<GenerationKind, (n: number) => Record<string, unknown>> = {
  TEXT: (n) => ({ text: `text ${n}` }),
  IMAGE: (n) => ({ images: [{ url: `http://localhost/v1/files/raw/img-${n}.png`, mimeType: 'image/png' }] }),
  VIDEO: (n) => ({ videos: [{ url: `http://localhost/v1/files/raw/vid-${n}.mp4`, durationSeconds: 5 }] }),
  AUDIO: (n) => ({ audio: { url: `http://localhost/v1/files/raw/aud-${n}.wav` } }),
};
let n = 0;

/** A generation in the user's library, saved by the library service (as the gateway does after a call). */
export async function generation(t: TestApp, userId: string, kind: GenerationKind = 'IMAGE', output?: Record<string, unknown>) {
  n++;
  // IMAGE and TEXT name their local model; the others are saved without one (a recipe then omits the model)
  const slug = kind === 'IMAGE' ? 'local/image' : kind === 'TEXT' ? 'local/text' : null;
  const local = slug ? await t.services.catalog.getBySlug(slug) : undefined;
  return t.services.library.saveGeneration({ userId, kind, prompt: `prompt ${n}`, output: output ?? OUTPUTS[kind](n), modelId: local?.row.id ?? null });
}

/** Publishes a fresh generation of `who` and returns the Post. */
export async function publish(t: TestApp, who: Member, body: Record<string, unknown> = {}, kind: GenerationKind = 'IMAGE') {
  const gen = await generation(t, who.id, kind);
  const response = await t.app.inject({ method: 'POST', url: '/v1/community/posts', headers: who.headers, payload: { generationId: gen.id, ...body } });
  if (response.statusCode !== 201) throw new Error(`publish failed: ${response.statusCode} ${response.body}`);
  return json(response);
}

/** Every item of a cursor-paged list, following nextCursor to the end. */
export async function allPages(t: TestApp, url: string, headers: Record<string, string> = {}, limit = 3): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 1000; guard++) {
    const sep = url.includes('?') ? '&' : '?';
    const response: { statusCode: number; body: string } = await t.app.inject({
      method: 'GET',
      url: `${url}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
      headers,
    });
    if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
    const page: { items: any[]; nextCursor: string | null } = JSON.parse(response.body);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (!cursor) return items;
  }
  throw new Error('too many pages');
}

/** Signs the member in again (after the test clock moved past the access token's 15 minutes) and updates their headers. */
export async function relogin(t: TestApp, ...who: Member[]): Promise<void> {
  for (const m of who) {
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: m.email, password: m.password } });
    if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`);
    const body: { accessToken: string } = JSON.parse(response.body);
    m.accessToken = body.accessToken;
    m.headers = bearer(body.accessToken);
  }
}
