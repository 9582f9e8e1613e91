import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, inArray, isNotNull } from 'drizzle-orm';
import type { BuiltApp } from '../../src/app.js';
import { passwordResets } from '../../src/db/schema/account.js';
import { NO_PASSWORD, refreshTokens, sessions, users } from '../../src/db/schema/auth.js';
import { generations } from '../../src/db/schema/library.js';
import { subscriptions } from '../../src/db/schema/subscriptions.js';
import { usageRecords } from '../../src/db/schema/usage.js';
import { walletLedger, wallets } from '../../src/db/schema/wallet.js';
import { PLAYGROUND_IDENTITY_EMAIL, hashPassword } from '../../src/modules/auth/index.js';
import { openSession } from '../../src/modules/auth/sessions.js';
import { openDatabase } from '../../src/platform/db/database.js';
import { sharedDatabase, type SharedDatabase } from '../helpers/shared-database.js';
import { bearer, json, signUpAs } from '../helpers/test-app.js';

/**
 * The squat from before addresses at storefront.internal were reserved: someone signed up as the playground's address
 * before any operator used the playground. The service must never adopt that account: the playground runs as its own
 * marked account, and the squatter's account stays an ordinary one that gets nothing of the playground.
 */
const SQUATTER_PASSWORD = 'squatter password';
const client = { ip: '203.0.113.7', userAgent: 'attacker' };
let shared: SharedDatabase;
let a: BuiltApp;
let b: BuiltApp;
let squatterId: string;

beforeAll(async () => {
  shared = await sharedDatabase('playground-squat');
  const database = shared.testDb.database ?? (await openDatabase({ url: shared.testDb.url! }));
  try {
    const [row] = await database.db
      .insert(users)
      .values({ email: PLAYGROUND_IDENTITY_EMAIL, passwordHash: await hashPassword(SQUATTER_PASSWORD), name: 'Squatter', handle: 'squatter' })
      .returning();
    squatterId = row!.id;
  } finally {
    if (!shared.testDb.database) await database.close();
  }
  // Two instances starting together, as a scaled deployment does after the upgrade.
  [a, b] = await Promise.all([shared.instance(), shared.instance()]);
});
afterAll(async () => {
  await a?.app.close();
  await b?.app.close();
  await shared?.close();
});

const db = () => a.platform.db;
const userRow = async (id: string) => (await db().select().from(users).where(eq(users.id, id)))[0]!;
const login = (email: string, password: string) => a.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });

/** Everything of the squatter's that the playground could have touched. */
async function squatterState() {
  const ownWallets = await db().select().from(wallets).where(eq(wallets.ownerId, squatterId));
  return {
    user: await userRow(squatterId),
    subscriptions: await db().select().from(subscriptions).where(eq(subscriptions.userId, squatterId)),
    wallets: ownWallets,
    ledger: ownWallets.length
      ? await db()
          .select()
          .from(walletLedger)
          .where(
            inArray(
              walletLedger.walletId,
              ownWallets.map((w) => w.id),
            ),
          )
      : [],
    usage: await db().select().from(usageRecords).where(eq(usageRecords.userId, squatterId)),
    generations: await db().select().from(generations).where(eq(generations.userId, squatterId)),
  };
}

describe('an account squatting the playground address before the upgrade', () => {
  it('is not adopted: the instances agree on one marked internal account at another reserved address', async () => {
    const id = await a.services.playground.identityId();
    expect(await b.services.playground.identityId()).toBe(id);
    expect(id).not.toBe(squatterId);
    const internal = await db().select().from(users).where(isNotNull(users.internalKind));
    expect(internal).toHaveLength(1);
    expect(internal[0]).toMatchObject({ id, internalKind: 'PLAYGROUND', role: 'USER', status: 'ACTIVE', passwordHash: NO_PASSWORD });
    expect(internal[0]!.email).toMatch(/^playground\+[0-9a-f]{16}@storefront\.internal$/);
    expect(await userRow(squatterId)).toMatchObject({ email: PLAYGROUND_IDENTITY_EMAIL, internalKind: null, role: 'USER', status: 'ACTIVE' });
  });

  it('is named in a warning at start, every start, until an operator deals with it', async () => {
    const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
    await a.services.playground.seed({ warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.obj).toMatchObject({
      squattedAddress: PLAYGROUND_IDENTITY_EMAIL,
      squatterId,
      playgroundAccountId: await a.services.playground.identityId(),
    });
    expect(warnings[0]!.msg).toContain(`address ${PLAYGROUND_IDENTITY_EMAIL} is held by an ordinary account (${squatterId})`);
    expect(await db().$count(users, isNotNull(users.internalKind))).toBe(1);
  });

  it("an operator's playground runs land on the internal account; the squatter gets no plan, grant or generation", async () => {
    const attacker = json(await login(PLAYGROUND_IDENTITY_EMAIL, SQUATTER_PASSWORD));
    expect(attacker.user.id).toBe(squatterId); // an ordinary account: its owner still signs in to it
    const before = await squatterState();
    const operator = await signUpAs(a, 'ADMIN');

    const text = await a.app.inject({
      method: 'POST',
      url: '/v1/admin/playground/text',
      headers: bearer(operator.accessToken),
      payload: { model: 'local/text', messages: [{ role: 'user', content: 'Confidential launch copy for the spring campaign' }] },
    });
    expect(text.statusCode, text.body).toBe(200);
    const image = await a.app.inject({
      method: 'POST',
      url: '/v1/admin/playground/image',
      headers: bearer(operator.accessToken),
      payload: { model: 'local/image', prompt: 'unreleased product shot', width: 64, height: 64 },
    });
    expect(image.statusCode, image.body).toBe(200);

    const id = await a.services.playground.identityId();
    for (const requestId of [json(text).requestId, json(image).requestId]) {
      expect((await db().select().from(usageRecords).where(eq(usageRecords.requestId, requestId))).map((u) => u.userId)).toEqual([id]);
      expect((await db().select().from(generations).where(eq(generations.requestId, requestId))).map((g) => g.userId)).toEqual([id]);
    }
    expect((await a.services.subscriptions.activeFor(id))!.plan).toMatchObject({ slug: 'internal-playground', internal: true });
    expect(await squatterState()).toEqual(before);

    // What the attacker sees of it: nothing.
    const library = await a.app.inject({ method: 'GET', url: '/v1/library/generations', headers: bearer(attacker.accessToken) });
    expect(library.statusCode).toBe(200);
    expect(json(library).items).toEqual([]);
    const me = json(await a.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(attacker.accessToken) }));
    expect(me.activeSubscription?.plan?.slug).not.toBe('internal-playground');
  });
});

describe('the internal account', () => {
  it('cannot sign in: password login, a reset code, a leftover refresh token', async () => {
    const id = await a.services.playground.identityId();
    const { email } = await userRow(id);
    for (const password of ['', NO_PASSWORD, SQUATTER_PASSWORD]) {
      const response = await login(email, password || 'x');
      expect(response.statusCode).toBe(401);
    }
    await a.services.account.password.issueResetCode(email, shared.clock.now());
    expect(await db().select().from(passwordResets).where(eq(passwordResets.userId, id))).toEqual([]);

    // A session row that should never exist: its refresh token still opens nothing.
    const { refreshToken } = await openSession(db(), id, client, shared.clock.now());
    const tokensBefore = await db().select().from(refreshTokens).where(eq(refreshTokens.userId, id));
    const refreshed = await a.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken } });
    expect(refreshed.statusCode).toBe(401);
    expect(json(refreshed).error.code).toBe('UNAUTHORIZED');
    expect(await db().select().from(refreshTokens).where(eq(refreshTokens.userId, id))).toEqual(tokensBefore);
    await db().delete(refreshTokens).where(eq(refreshTokens.userId, id));
    await db().delete(sessions).where(eq(sessions.userId, id));
  });

  it('the database refuses it a password, whatever path tries', async () => {
    const id = await a.services.playground.identityId();
    await expect(a.services.auth.data.users.setPasswordHash(id, await hashPassword('chosen by an attacker'), shared.clock.now())).rejects.toThrow();
    expect((await userRow(id)).passwordHash).toBe(NO_PASSWORD);
  });
});
