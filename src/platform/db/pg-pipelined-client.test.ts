import type net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../../test/helpers/pg-admin.js';
import { inOneWrite, pipelinedClient } from './pg-pipelined-client.js';

// The group commit's connection (pg-grouped.ts): node-postgres in pipeline mode on a socket of its own, so a group's
// queries leave in one write. PostgreSQL only.
const url = testDatabaseUrl();
let client: pg.Client & { socket: net.Socket };
/** Writes the socket handed to the kernel (one per `_write` or `_writev`: the syscalls a group costs). */
const writes = { count: 0 };

beforeAll(async () => {
  if (!url) return;
  client = new (pipelinedClient(pg.Client))({ connectionString: url }) as pg.Client & { socket: net.Socket };
  await client.connect();
  const socket = client.socket as unknown as { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
  for (const method of ['_write', '_writev'] as const) {
    const original = socket[method].bind(socket);
    socket[method] = (...args: unknown[]) => {
      writes.count++;
      original(...args);
    };
  }
});
afterAll(async () => client?.end());

const group = () => [
  client.query('begin'),
  ...Array.from({ length: 10 }, (_, i) => client.query({ name: 'pipelined_probe', text: 'select $1::int as n', values: [i] })),
  client.query('commit'),
];

describe.runIf(url)('the pipelined client', () => {
  it('sends a group held by inOneWrite in one write, and answers every query in order', async () => {
    await Promise.all(group()); // the statement is prepared on the connection once
    writes.count = 0;
    const results = await Promise.all(inOneWrite(client, group));
    expect(writes.count).toBe(1);
    expect(results.slice(1, -1).map((result) => result.rows[0])).toEqual(Array.from({ length: 10 }, (_, n) => ({ n })));
    expect(results.at(-1)!.command).toBe('COMMIT');
  });

  it('sends each query by itself when not held (what node-postgres does alone)', async () => {
    writes.count = 0;
    await Promise.all(group());
    expect(writes.count).toBe(12);
  });
});
