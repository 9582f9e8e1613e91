import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idleProcess } from '../../../test/helpers/idle-process.js';
import { EmbeddedDatabaseInUseError, lockEmbeddedDatabase } from './embedded-lock.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'storefront-lock-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('the embedded database lock', () => {
  it('is held by this process until released', () => {
    const dataDir = path.join(dir, 'own');
    const release = lockEmbeddedDatabase(dataDir);
    expect(readFileSync(`${dataDir}.lock`, 'utf8')).toBe(String(process.pid));
    release();
    expect(existsSync(`${dataDir}.lock`)).toBe(false);
  });

  it('refuses while another live process holds it, naming it, and is taken over once that process is gone', async () => {
    const dataDir = path.join(dir, 'shared');
    const other = idleProcess();
    writeFileSync(`${dataDir}.lock`, String(other.pid));
    expect(() => lockEmbeddedDatabase(dataDir)).toThrow(EmbeddedDatabaseInUseError);
    expect(() => lockEmbeddedDatabase(dataDir)).toThrow(`is open in another process (pid ${other.pid})`);
    expect(readFileSync(`${dataDir}.lock`, 'utf8')).toBe(String(other.pid));

    await other.kill(); // killed: its lock stays behind
    const release = lockEmbeddedDatabase(dataDir);
    expect(readFileSync(`${dataDir}.lock`, 'utf8')).toBe(String(process.pid));
    release();
  });

  it('does not remove a lock another process has taken since', () => {
    const dataDir = path.join(dir, 'moved');
    const release = lockEmbeddedDatabase(dataDir);
    writeFileSync(`${dataDir}.lock`, '1');
    release();
    expect(readFileSync(`${dataDir}.lock`, 'utf8')).toBe('1');
  });
});
