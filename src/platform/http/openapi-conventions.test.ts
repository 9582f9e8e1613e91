import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { operationIdFor } from './openapi-conventions.js';

// The committed document; test/operations.test.ts proves it equals what the code serves.
const document = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8')) as {
  servers: unknown[];
  paths: Record<string, Record<string, Operation>>;
};
interface Operation {
  operationId?: string;
  security?: Array<Record<string, unknown>>;
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { description: string; content?: Record<string, unknown> }>;
}
const operations = Object.entries(document.paths).flatMap(([p, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${p}`, op })),
);
const find = (key: string) => operations.find((o) => o.key === key)!.op;

describe('OpenAPI conventions', () => {
  it('derives readable operation ids from method and path', () => {
    expect(operationIdFor('GET', '/v1/users/me')).toBe('getUsersMe');
    expect(operationIdFor('post', '/v1/jobs/{id}/cancel')).toBe('postJobsByIdCancel');
    expect(operationIdFor('delete', '/v1/account/blocks/{handle}')).toBe('deleteAccountBlocksByHandle');
    expect(operationIdFor('get', '/v1/ai/enhance/prompt')).toBe('getAiEnhancePrompt');
    expect(operationIdFor('get', '/healthz')).toBe('getHealthz');
  });

  it('gives every operation a unique operation id', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('documents 429 and 500 on every operation, and no success response as "Default Response"', () => {
    for (const { key, op } of operations) {
      expect(op.responses['429'], key).toBeDefined();
      expect(op.responses['500'], key).toBeDefined();
      for (const response of Object.values(op.responses)) expect(response.description, key).not.toBe('Default Response');
    }
  });

  it('says security: [] on public operations, names API keys where they are accepted, and lists a server', () => {
    expect(find('POST /v1/auth/signup').security).toEqual([]);
    expect(find('GET /healthz').security).toEqual([]);
    expect(find('GET /v1/users/me').security).toEqual([{ bearerAuth: [] }]);
    expect(find('POST /v1/ai/text').security).toEqual([{ bearerAuth: [] }, { apiKeyAuth: [] }]);
    expect(operations.every((o) => Array.isArray(o.op.security))).toBe(true);
    expect(document.servers.length).toBeGreaterThan(0);
  });

  it('describes event streams as text/event-stream, binary uploads as bytes, and names the wildcard file path', () => {
    expect(Object.keys(find('GET /v1/jobs/{id}/stream').responses['200']!.content!)).toEqual(['text/event-stream']);
    expect(Object.keys(find('POST /v1/ai/text').responses['200']!.content!)).toEqual(['application/json', 'text/event-stream']);
    expect(find('PUT /v1/files/upload/{fileId}').requestBody!.content).toHaveProperty('application/octet-stream');
    expect(document.paths).toHaveProperty('/v1/files/raw/{path}');
  });
});
