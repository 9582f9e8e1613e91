import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import { createAuditService } from '../../src/modules/audit/service.js';
import { systemClock } from '../../src/platform/clock/clock.js';
import { idleProcess } from '../helpers/idle-process.js';
import { TEST_JWT_SECRET } from '../helpers/test-app.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-cli-'));
  // `npm run admin` builds, then runs dist/admin.js; the test builds once and runs the bundle for each command.
  await run(process.execPath, ['scripts/build.mjs'], { cwd: root });
}, 120_000);
afterAll(async () => rm(dataDir, { recursive: true, force: true }));

/** Runs `npm run admin -- <args>` as the operator would (the built bundle), against the embedded database in `dataDir`. */
async function admin(args: string[], env: Record<string, string> = {}) {
  const result = await run(process.execPath, ['--enable-source-maps', 'dist/admin.js', ...args], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'error', NODE_ENV: 'test', ...env },
  }).catch((err: { code: number; stdout: string; stderr: string }) => err);
  return { code: 'code' in result ? result.code : 0, stdout: result.stdout, stderr: result.stderr };
}

describe('admin CLI', () => {
  it('creates a SUPER_ADMIN, grants tokens once per key, lists providers, and audits as CLI', async () => {
    const created = await admin(['create-admin', 'ops@example.com', '--super'], { ADMIN_CLI_PASSWORD: 'operator password' });
    expect(created.stdout).toMatch(/^created: ops@example.com \(.+\) is SUPER_ADMIN/);

    const granted = await admin(['grant', 'ops@example.com', '2500', '--reason', 'welcome', '--key', 'cli-test-key-1']);
    expect(granted.stdout).toContain('granted 2500 tokens to ops@example.com: balance 1002500 tokens (key cli-test-key-1)');
    const retried = await admin(['grant', 'ops@example.com', '2500', '--reason', 'welcome', '--key', 'cli-test-key-1']);
    expect(retried.stdout).toContain('already granted with this key (2500 tokens); nothing changed for ops@example.com: balance 1002500');

    const providers = await admin(['providers']);
    expect(providers.stdout).toMatch(/PROVIDER\s+HEALTH\s+MODELS/);
    expect(providers.stdout).toMatch(/local\s+ACTIVE\s+\d+/);

    const refused = await admin(['grant', 'nobody@example.com', '10', '--reason', 'x']);
    expect(refused).toMatchObject({ code: 2 });
    expect(refused.stderr).toContain('No account has the email nobody@example.com');

    let database: Database | undefined;
    try {
      database = await openDatabase({ dataDir: path.join(dataDir, 'db') });
      const trail = await createAuditService({ db: database.db, clock: systemClock }).list({ limit: 10 });
      expect(trail.items.map((e) => [e.action, e.actor.role, e.actor.userId])).toEqual([
        ['wallet.grant', 'CLI', null],
        ['user.create', 'CLI', null],
      ]);
      expect(trail.items[0]).toMatchObject({ reason: 'welcome', after: { tokens: 2500 } });
    } finally {
      await database?.close();
    }
  }, 300_000);

  it('explains itself: help, an unknown command, and a new account without a password', async () => {
    const help = await admin(['help']);
    expect(help).toMatchObject({ code: 0 });
    expect(help.stdout).toContain('create-admin <email> [--super]');
    const unknown = await admin(['frobnicate']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Unknown command "frobnicate"');
    const noPassword = await admin(['create-admin', 'new@example.com']);
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('needs a password');
  }, 300_000);

  it('refuses to open the embedded database while another process (a running server) has it, and says what to do', async () => {
    const holder = idleProcess();
    try {
      await writeFile(path.join(dataDir, 'db.lock'), String(holder.pid));
      const refused = await admin(['providers']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`is open in another process (pid ${holder.pid}). Stop that process first`);
      expect(refused.stderr).not.toContain('    at ');
    } finally {
      await holder.kill();
    }
    expect((await admin(['providers'])).code).toBe(0); // the dead process's lock is taken over
  }, 300_000);
});
