import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { buildApp, type BuiltApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { PLAYGROUND_IDENTITY_EMAIL, hashPassword } from '../../src/modules/auth/index.js';
import { ManualClock } from '../../src/platform/clock/clock.js';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import { migrationsFolder } from '../../src/platform/paths.js';
import { createTestDatabase } from '../helpers/test-database.js';
import { testEnv } from '../helpers/test-app.js';

/**
 * Upgrading a database the release before this fix left behind. The playground's account that release made itself
 * (no password: the marker only the service stored) is adopted and whatever could act as it ends; an account someone
 * signed up with at that address first is never adopted.
 */
const MARKER_MIGRATION = '0030_internal_accounts';
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A migrated test database taken back to before the marker: the users table as the release before it had it. */
async function legacyDatabase(): Promise<{ database: Database; url: string | null }> {
  const testDb = await createTestDatabase();
  cleanups.push(() => testDb.drop());
  const database = testDb.database ?? (await openDatabase({ url: testDb.url! }));
  if (!testDb.database) cleanups.push(() => database.close());
  await database.exec('ALTER TABLE users DROP COLUMN internal_kind CASCADE');
  return { database, url: testDb.url };
}

/** The marker migration's statements, as the migrator runs them on upgrade. */
async function applyMarkerMigration(database: Database): Promise<void> {
  const text = await readFile(path.join(migrationsFolder(), `${MARKER_MIGRATION}.sql`), 'utf8');
  for (const statement of text.split('--> statement-breakpoint')) if (statement.trim()) await database.exec(statement);
}

/** The release's accounts table had no marker column: rows are written as it wrote them. */
async function legacyUser(database: Database, passwordHash: string): Promise<string> {
  const id = uuidv7();
  await database.query(
    `INSERT INTO users (id, email, email_verified, password_hash, name, handle, role, status) VALUES ($1, $2, true, $3, 'Admin playground', $4, 'USER', 'ACTIVE')`,
    [id, PLAYGROUND_IDENTITY_EMAIL, passwordHash, `legacy_${randomBytes(4).toString('hex')}`],
  );
  return id;
}

/** Upgrades (the marker migration) and starts the service on the database. */
async function upgradeAndStart(legacy: { database: Database; url: string | null }): Promise<BuiltApp> {
  await applyMarkerMigration(legacy.database);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-legacy-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const built = await buildApp(loadConfig(testEnv(legacy.url, dataDir)), { database: legacy.database, clock: new ManualClock(), startJobs: false });
  cleanups.push(() => built.app.close());
  return built;
}

const warningsAtStart = async (built: BuiltApp) => {
  const warnings: string[] = [];
  await built.services.playground.seed({ warn: (_fields, message) => warnings.push(message) });
  return warnings;
};

describe('upgrading with the playground account the service made itself', () => {
  let legacy: { database: Database; url: string | null };
  let built: BuiltApp;
  let id: string;
  beforeAll(async () => {
    legacy = await legacyDatabase();
    id = await legacyUser(legacy.database, '!no-password');
    const sessionId = uuidv7();
    const q = (text: string, values: unknown[]) => legacy.database.query(text, values);
    // What an identity-provider sign-in at the address could have left (it linked the account by its email).
    await q(`INSERT INTO user_identities (id, user_id, issuer, subject, email) VALUES ($1, $2, 'https://idp.example.com', 'attacker', $3)`, [
      uuidv7(),
      id,
      PLAYGROUND_IDENTITY_EMAIL,
    ]);
    await q(`INSERT INTO sessions (id, user_id, device) VALUES ($1, $2, 'Attacker laptop')`, [sessionId, id]);
    await q(`INSERT INTO refresh_tokens (id, session_id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, 'legacy-hash', now() + interval '30 days')`, [
      uuidv7(),
      sessionId,
      id,
    ]);
    await q(`INSERT INTO api_keys (id, user_id, label, key_hash, key_prefix, scopes) VALUES ($1, $2, 'exfiltrate', 'legacy-key-hash', 'abcd', '{ai:text}')`, [
      uuidv7(),
      id,
    ]);
    await q(`INSERT INTO webhook_endpoints (id, user_id, url, events, secret) VALUES ($1, $2, 'https://attacker.example.com/hook', '{*}', 'whsec_legacy')`, [
      uuidv7(),
      id,
    ]);
    built = await upgradeAndStart(legacy);
  });

  it('adopts it and ends every way someone could act as it: provider links, sessions, refresh tokens, API keys, webhooks', async () => {
    const rows = async <T>(text: string) => (await legacy.database.query<T>(text, [id])).rows;
    expect(await rows(`SELECT internal_kind, email, password_hash FROM users WHERE id = $1`)).toEqual([
      { internal_kind: 'PLAYGROUND', email: PLAYGROUND_IDENTITY_EMAIL, password_hash: '!no-password' },
    ]);
    expect(await rows(`SELECT id FROM user_identities WHERE user_id = $1`)).toEqual([]);
    expect(await rows(`SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`)).toEqual([]);
    expect(await rows(`SELECT id FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL`)).toEqual([]);
    expect(await rows(`SELECT id FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL`)).toEqual([]);
    expect(await rows(`SELECT status FROM webhook_endpoints WHERE user_id = $1`)).toEqual([{ status: 'DISABLED' }]);
  });

  it('the playground keeps that account (and its history); nothing squats its address, so nothing is reported', async () => {
    expect(await built.services.playground.identityId()).toBe(id);
    expect(await warningsAtStart(built)).toEqual([]);
    expect((await legacy.database.query(`SELECT count(*)::int AS n FROM users WHERE internal_kind IS NOT NULL`)).rows).toEqual([{ n: 1 }]);
  });
});

describe('upgrading with an account someone signed up with at the playground address', () => {
  let legacy: { database: Database; url: string | null };
  let built: BuiltApp;
  let squatterId: string;
  beforeAll(async () => {
    legacy = await legacyDatabase();
    squatterId = await legacyUser(legacy.database, await hashPassword('squatter password'));
    built = await upgradeAndStart(legacy);
  });

  it('never adopts it: the playground gets an account of its own, and the start names the squatted address', async () => {
    expect((await legacy.database.query(`SELECT internal_kind FROM users WHERE id = $1`, [squatterId])).rows).toEqual([{ internal_kind: null }]);
    expect(await built.services.playground.identityId()).not.toBe(squatterId);
    const warnings = await warningsAtStart(built);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${PLAYGROUND_IDENTITY_EMAIL} is held by an ordinary account (${squatterId})`);
  });
});
