import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import utils from 'pg/lib/utils.js';
import { describe, expect, it } from 'vitest';

/**
 * The group-commit runner (pg-grouped.ts, pg-group-query.ts) relies on parts of node-postgres that are not its public
 * API. package.json pins `pg` and `pg-protocol` to exact versions for that reason; this test names each part, so an
 * upgrade that changes one fails here with what to re-check, not somewhere in the metered call under load. Run on
 * both databases (no server needed).
 */
const root = path.join(import.meta.dirname, '../../..');
const json = (file: string) => JSON.parse(readFileSync(path.join(root, file), 'utf8')) as { version: string; dependencies: Record<string, string> };
const REASON = 'the group-commit runner (src/platform/db/pg-grouped.ts) relies on it: re-check the runner against the new version, then update this test';

describe("node-postgres' internals the group-commit runner relies on", () => {
  it('pg and pg-protocol are installed at the exact versions package.json pins', () => {
    const pins = json('package.json').dependencies;
    for (const name of ['pg', 'pg-protocol']) {
      expect(pins[name], `package.json must pin ${name} to an exact version: ${REASON}`).toMatch(/^\d+\.\d+\.\d+$/);
      expect(json(`node_modules/${name}/package.json`).version, `${name} installed is not the pinned version: ${REASON}`).toBe(pins[name]);
    }
  });

  it("a client's connection keeps its prepared statements by name and writes to its stream", () => {
    const client = new pg.Client();
    const connection = (client as unknown as { connection?: { parsedStatements?: unknown; stream?: { write?: unknown } } }).connection;
    expect(typeof connection, `pg.Client#connection is gone: ${REASON}`).toBe('object');
    expect(connection!.parsedStatements, `Connection#parsedStatements (names of statements prepared on it) changed: ${REASON}`).toEqual({});
    expect(typeof connection!.stream?.write, `Connection#stream.write changed: ${REASON}`).toBe('function');
  });

  it("the client hands each protocol message to its active query's handler, in queue order", () => {
    const source = (method: string) => String((pg.Client.prototype as unknown as Record<string, unknown>)[method]);
    const handlers: Array<[string, string]> = [
      ['_handleRowDescription', 'handleRowDescription('],
      ['_handleDataRow', 'handleDataRow('],
      ['_handleCommandComplete', 'handleCommandComplete('],
      ['_handleEmptyQuery', 'handleEmptyQuery('],
      ['_handleErrorMessage', 'handleError('],
      ['_handleReadyForQuery', 'handleReadyForQuery('],
    ];
    for (const [method, call] of handlers) {
      expect(source(method), `pg.Client#${method} no longer calls the active query's ${call}): ${REASON}`).toContain(call);
      expect(source(method), `pg.Client#${method} no longer reads the active query: ${REASON}`).toContain('_getActiveQuery()');
    }
    expect(source('_pulseQueryQueue'), `pg.Client#_pulseQueryQueue no longer submits the next query in order: ${REASON}`).toContain('.submit(');
  });

  it('pg/lib/utils.js prepares values as query() does (text, or bytes for a Buffer)', () => {
    expect(typeof utils.prepareValue, `pg/lib/utils.js#prepareValue is gone: ${REASON}`).toBe('function');
    expect(utils.prepareValue(['a', 'b "c"']), REASON).toBe('{"a","b \\"c\\""}');
    expect(utils.prepareValue(42), REASON).toBe('42');
    expect(utils.prepareValue(null), REASON).toBeNull();
    expect(Buffer.isBuffer(utils.prepareValue(Buffer.from([1]))), REASON).toBe(true);
  });
});
