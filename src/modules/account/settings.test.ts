import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { userBlocks } from '../../db/schema/account.js';
import { users } from '../../db/schema/auth.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string | null, payload?: unknown) =>
  t.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload !== undefined ? { payload: payload as object } : {}) });
const userRow = async (id: string) => (await t.platform.db.select().from(users).where(eq(users.id, id)))[0]!;
let handleCounter = 0;
const freshHandle = () => `h_${process.pid}_${Date.now() % 1e6}_${handleCounter++}`.slice(0, 30);

describe('PATCH /v1/account/profile', () => {
  it('changes handle, avatar and bio and answers the public user row', async () => {
    const { accessToken, user } = await signUp(t.app);
    const handle = freshHandle();
    const response = await req('PATCH', '/v1/account/profile', accessToken, { handle, avatarUrl: 'https://cdn.example.com/a.png', bio: '  Makes things.  ' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({
      id: user.id,
      name: 'Test User',
      handle,
      avatarUrl: 'https://cdn.example.com/a.png',
      bio: 'Makes things.',
      createdAt: expect.any(String),
    });
    const me = json(await req('GET', '/v1/users/me', accessToken));
    expect(me.user).toMatchObject({ handle, avatarUrl: 'https://cdn.example.com/a.png', bio: 'Makes things.' });
    // null (or an empty bio) clears; omitted fields stay
    const cleared = json(await req('PATCH', '/v1/account/profile', accessToken, { avatarUrl: null, bio: '' }));
    expect(cleared).toMatchObject({ handle, avatarUrl: null, bio: null });
  });

  it('409 when the handle is taken, whatever its case; your own handle in another case is fine', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const taken = await req('PATCH', '/v1/account/profile', b.accessToken, { handle: a.user.handle.toUpperCase() });
    expect(taken.statusCode).toBe(409);
    expect(json(taken).error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('taken') });
    expect((await userRow(b.user.id)).handle).toBe(b.user.handle);
    const own = await req('PATCH', '/v1/account/profile', a.accessToken, { handle: a.user.handle.toUpperCase() });
    expect(own.statusCode).toBe(200);
  });

  it.each([
    ['a short handle', { handle: 'ab' }, 'handle'],
    ['a long handle', { handle: 'a'.repeat(31) }, 'handle'],
    ['a handle with a dash', { handle: 'has-dash' }, 'handle'],
    ['a handle with a space', { handle: 'has space' }, 'handle'],
    ['a bio over 500 characters', { bio: 'b'.repeat(501) }, 'bio'],
    ['an avatar that is not a URL', { avatarUrl: 'not a url' }, 'avatarUrl'],
    ['an avatar with another scheme', { avatarUrl: 'javascript:alert(1)' }, 'avatarUrl'],
    ['a handle of the wrong type', { handle: 12345 }, 'handle'],
    ['an unknown field', { name: 'x' }, 'name'],
  ])('refuses %s with 400 and changes nothing', async (_label, payload, field) => {
    const { accessToken, user } = await signUp(t.app);
    const response = await req('PATCH', '/v1/account/profile', accessToken, payload);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    expect(await userRow(user.id)).toMatchObject({ handle: user.handle, bio: null, avatarUrl: null });
  });

  it('accepts a bio of exactly 500 characters; refuses an empty body; needs a token', async () => {
    const { accessToken } = await signUp(t.app);
    expect((await req('PATCH', '/v1/account/profile', accessToken, { bio: 'b'.repeat(500) })).statusCode).toBe(200);
    expect((await req('PATCH', '/v1/account/profile', accessToken, {})).statusCode).toBe(400);
    expect((await req('PATCH', '/v1/account/profile', null, { bio: 'x' })).statusCode).toBe(401);
  });
});

describe('preferences', () => {
  const defaults = {
    locale: 'en',
    timezone: 'UTC',
    theme: 'system',
    profileVisibility: 'PUBLIC',
    allowDmFromAnyone: true,
    defaultGenerationVisibility: 'PRIVATE',
  };

  it('start at the spec defaults; PATCH changes only what is sent', async () => {
    const { accessToken } = await signUp(t.app);
    expect(json(await req('GET', '/v1/account/preferences', accessToken))).toEqual(defaults);
    const patched = await req('PATCH', '/v1/account/preferences', accessToken, { theme: 'dark', timezone: 'Asia/Dhaka', locale: 'pt-br' });
    expect(patched.statusCode).toBe(200);
    expect(json(patched)).toEqual({ ...defaults, theme: 'dark', timezone: 'Asia/Dhaka', locale: 'pt-BR' });
    const again = json(
      await req('PATCH', '/v1/account/preferences', accessToken, {
        defaultGenerationVisibility: 'PUBLIC',
        allowDmFromAnyone: false,
        profileVisibility: 'FOLLOWERS_ONLY',
      }),
    );
    expect(again).toEqual({
      ...defaults,
      theme: 'dark',
      timezone: 'Asia/Dhaka',
      locale: 'pt-BR',
      defaultGenerationVisibility: 'PUBLIC',
      allowDmFromAnyone: false,
      profileVisibility: 'FOLLOWERS_ONLY',
    });
    expect(json(await req('GET', '/v1/account/preferences', accessToken))).toEqual(again);
    expect(await t.services.account.profile.getPreferences(json(await req('GET', '/v1/users/me', accessToken)).user.id)).toEqual(again);
  });

  it.each([
    ['a locale of 1 character', { locale: 'e' }],
    ['a locale over 10 characters', { locale: 'en-US-extra1' }],
    ['an invalid locale', { locale: 'not valid' }],
    ['a timezone of 1 character', { timezone: 'U' }],
    ['a timezone over 64 characters', { timezone: 'E'.repeat(65) }],
    ['an unknown timezone', { timezone: 'Mars/Olympus' }],
    ['an unknown theme', { theme: 'sepia' }],
    ['an unknown visibility', { profileVisibility: 'FRIENDS' }],
    ['a string boolean', { allowDmFromAnyone: 'yes' }],
    ['an unknown generation visibility', { defaultGenerationVisibility: 'SECRET' }],
    ['an unknown field', { fontSize: 12 }],
  ])('refuses %s with 400 and changes nothing', async (_label, payload) => {
    const { accessToken } = await signUp(t.app);
    const response = await req('PATCH', '/v1/account/preferences', accessToken, payload);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    expect(json(await req('GET', '/v1/account/preferences', accessToken))).toEqual(defaults);
  });

  it('need a token', async () => {
    expect((await req('GET', '/v1/account/preferences', null)).statusCode).toBe(401);
    expect((await req('PATCH', '/v1/account/preferences', null, { theme: 'dark' })).statusCode).toBe(401);
  });
});

describe('notification preferences', () => {
  const defaults = {
    emailJobUpdates: true,
    emailBillingAlerts: true,
    emailSecurityAlerts: true,
    emailMarketing: false,
    inAppCommunityActivity: true,
    inAppQuotaWarnings: true,
  };

  it('all on except marketing by default; PATCH switches single flags', async () => {
    const { accessToken } = await signUp(t.app);
    expect(json(await req('GET', '/v1/account/notification-prefs', accessToken))).toEqual(defaults);
    const patched = json(await req('PATCH', '/v1/account/notification-prefs', accessToken, { emailMarketing: true, inAppQuotaWarnings: false }));
    expect(patched).toEqual({ ...defaults, emailMarketing: true, inAppQuotaWarnings: false });
    expect(json(await req('GET', '/v1/account/notification-prefs', accessToken))).toEqual(patched);
  });

  it('refuses non-booleans and unknown flags with 400; needs a token', async () => {
    const { accessToken } = await signUp(t.app);
    for (const payload of [{ emailMarketing: 'true' }, { emailMarketing: 1 }, { pushEverything: true }]) {
      expect((await req('PATCH', '/v1/account/notification-prefs', accessToken, payload)).statusCode).toBe(400);
    }
    expect(json(await req('GET', '/v1/account/notification-prefs', accessToken))).toEqual(defaults);
    expect((await req('GET', '/v1/account/notification-prefs', null)).statusCode).toBe(401);
  });
});

describe('blocks', () => {
  it('blocks by handle (BLOCK by default), lists, changes the kind, and unblocks', async () => {
    const me = await signUp(t.app);
    const troll = await signUp(t.app);
    const noisy = await signUp(t.app);
    const created = await req('POST', '/v1/account/blocks', me.accessToken, { handle: troll.user.handle.toUpperCase(), reason: 'spam' });
    expect(created.statusCode).toBe(201);
    expect(json(created)).toEqual({ handle: troll.user.handle, kind: 'BLOCK', reason: 'spam', createdAt: t.clock.now().toISOString() });
    t.clock.advance(1000);
    const muted = await req('POST', '/v1/account/blocks', me.accessToken, { handle: noisy.user.handle, kind: 'MUTE' });
    expect(muted.statusCode).toBe(201);
    expect(json(muted)).toMatchObject({ kind: 'MUTE', reason: null });

    const list = json(await req('GET', '/v1/account/blocks', me.accessToken));
    expect(list.items.map((b: { handle: string; kind: string }) => [b.handle, b.kind])).toEqual([
      [noisy.user.handle, 'MUTE'],
      [troll.user.handle, 'BLOCK'],
    ]);
    expect(list.nextCursor).toBeNull();

    // blocking again updates the row instead of adding one
    const changed = await req('POST', '/v1/account/blocks', me.accessToken, { handle: noisy.user.handle, kind: 'BLOCK', reason: 'worse now' });
    expect(changed.statusCode).toBe(200);
    expect(json(changed)).toMatchObject({ kind: 'BLOCK', reason: 'worse now' });
    expect(json(await req('GET', '/v1/account/blocks', me.accessToken)).items).toHaveLength(2);

    const removed = await req('DELETE', `/v1/account/blocks/${troll.user.handle}`, me.accessToken);
    expect(removed.statusCode).toBe(200);
    expect(json(removed)).toEqual({ ok: true });
    expect(json(await req('GET', '/v1/account/blocks', me.accessToken)).items.map((b: { handle: string }) => b.handle)).toEqual([noisy.user.handle]);
    expect((await req('DELETE', `/v1/account/blocks/${troll.user.handle}`, me.accessToken)).statusCode).toBe(404);
  });

  it('404 for an unknown handle, 400 for yourself, and nothing is stored', async () => {
    const me = await signUp(t.app);
    const unknown = await req('POST', '/v1/account/blocks', me.accessToken, { handle: 'nobody_has_this_handle' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown).error.code).toBe('NOT_FOUND');
    const self = await req('POST', '/v1/account/blocks', me.accessToken, { handle: me.user.handle });
    expect(self.statusCode).toBe(400);
    expect(json(self).error.message).toBe('You cannot block or mute yourself.');
    expect(await t.platform.db.select().from(userBlocks).where(eq(userBlocks.userId, me.user.id))).toHaveLength(0);
    expect((await req('DELETE', '/v1/account/blocks/nobody_has_this_handle', me.accessToken)).statusCode).toBe(404);
  });

  it.each([
    ['a reason over 200 characters', { reason: 'r'.repeat(201) }],
    ['an unknown kind', { kind: 'BAN' }],
    ['a missing handle', { handle: undefined }],
    ['an unknown field', { note: 'x' }],
  ])('refuses %s with 400', async (_label, extra) => {
    const me = await signUp(t.app);
    const other = await signUp(t.app);
    const payload = JSON.parse(JSON.stringify({ handle: other.user.handle, ...extra }));
    const response = await req('POST', '/v1/account/blocks', me.accessToken, payload);
    expect(response.statusCode).toBe(400);
    expect(await t.platform.db.select().from(userBlocks).where(eq(userBlocks.userId, me.user.id))).toHaveLength(0);
  });

  it("a reason of exactly 200 characters is fine; the list is the caller's own and pages", async () => {
    const me = await signUp(t.app);
    const others = [await signUp(t.app), await signUp(t.app), await signUp(t.app)];
    expect((await req('POST', '/v1/account/blocks', me.accessToken, { handle: others[0]!.user.handle, reason: 'r'.repeat(200) })).statusCode).toBe(201);
    for (const other of others.slice(1)) {
      t.clock.advance(10);
      await req('POST', '/v1/account/blocks', me.accessToken, { handle: other.user.handle });
    }
    const page1 = json(await req('GET', '/v1/account/blocks?limit=2', me.accessToken));
    expect(page1.items).toHaveLength(2);
    const page2 = json(await req('GET', `/v1/account/blocks?limit=2&cursor=${page1.nextCursor}`, me.accessToken));
    expect(page2.items).toHaveLength(1);
    expect(page2.nextCursor).toBeNull();
    expect(json(await req('GET', '/v1/account/blocks', others[0]!.accessToken)).items).toHaveLength(0);
    expect((await req('GET', '/v1/account/blocks?foo=1', me.accessToken)).statusCode).toBe(400);
  });

  it('other modules can ask whether two users blocked each other (BLOCK only, either direction)', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const c = await signUp(t.app);
    await req('POST', '/v1/account/blocks', a.accessToken, { handle: b.user.handle });
    await req('POST', '/v1/account/blocks', a.accessToken, { handle: c.user.handle, kind: 'MUTE' });
    const { blocks } = t.services.account;
    expect(await blocks.blockedEitherWay(t.platform.db, a.user.id, b.user.id)).toBe(true);
    expect(await blocks.blockedEitherWay(t.platform.db, b.user.id, a.user.id)).toBe(true);
    expect(await blocks.blockedEitherWay(t.platform.db, a.user.id, c.user.id)).toBe(false);
  });

  it('other modules get the users hidden from a viewer: blocked or muted by them, and those who blocked them', async () => {
    const [viewer, blocked, muted, blocker, bystander] = [
      await signUp(t.app),
      await signUp(t.app),
      await signUp(t.app),
      await signUp(t.app),
      await signUp(t.app),
    ];
    await req('POST', '/v1/account/blocks', viewer.accessToken, { handle: blocked.user.handle });
    await req('POST', '/v1/account/blocks', viewer.accessToken, { handle: muted.user.handle, kind: 'MUTE' });
    await req('POST', '/v1/account/blocks', blocker.accessToken, { handle: viewer.user.handle });
    await req('POST', '/v1/account/blocks', bystander.accessToken, { handle: viewer.user.handle, kind: 'MUTE' });
    const hidden = await t.services.account.blocks.hiddenUserIds(viewer.user.id);
    expect(new Set(hidden)).toEqual(new Set([blocked.user.id, muted.user.id, blocker.user.id]));
    expect(await t.services.account.blocks.hiddenUserIds(bystander.user.id)).toEqual([viewer.user.id]);
  });

  it('need a token', async () => {
    expect((await req('GET', '/v1/account/blocks', null)).statusCode).toBe(401);
    expect((await req('POST', '/v1/account/blocks', null, { handle: 'someone' })).statusCode).toBe(401);
    expect((await req('DELETE', '/v1/account/blocks/someone', null)).statusCode).toBe(401);
  });
});
