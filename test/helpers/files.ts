import type { FastifyInstance } from 'fastify';
import { bearer } from './test-app.js';
import { generatePng } from '../../src/platform/media/image.js';

/** A real PNG of about the given number of bytes or more (a generated picture). */
export const samplePng = (side = 48, seed = 1) => generatePng({ prompt: 'upload sample', seed, width: side, height: side });

/** The path and query of an absolute URL, as app.inject wants it. */
export const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

/** Step one of an upload through the API; fails the test if it is refused. */
export async function initUpload(app: FastifyInstance, token: string, body: Record<string, unknown>) {
  const response = await app.inject({ method: 'POST', url: '/v1/files/init', headers: bearer(token), payload: body });
  if (response.statusCode !== 201) throw new Error(`init failed: ${response.statusCode} ${response.body}`);
  return response.json<{ fileId: string; uploadUrl: string; method: 'PUT'; headers: { 'Content-Type': string }; expiresAt: string; url: string }>();
}

/** Both steps: init then PUT; returns the ready file record. */
export async function uploadFile(app: FastifyInstance, token: string, bytes: Buffer, contentType = 'image/png', kind = 'IMAGE', filename?: string) {
  const started = await initUpload(app, token, { kind, contentType, size: bytes.length, ...(filename ? { filename } : {}) });
  const response = await app.inject({ method: 'PUT', url: pathOf(started.uploadUrl), headers: { 'content-type': contentType }, payload: bytes });
  if (response.statusCode !== 200) throw new Error(`upload failed: ${response.statusCode} ${response.body}`);
  return { ...started, file: response.json<{ id: string; url: string; size: number; contentType: string; status: string }>() };
}
