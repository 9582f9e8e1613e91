import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, setPlan } from '../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
let superAdmin: Awaited<ReturnType<typeof signUpAs>>;
let admin: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp();
  superAdmin = await signUpAs(t, 'SUPER_ADMIN');
  admin = await signUpAs(t, 'ADMIN');
});
afterAll(async () => t?.close());

type Method = 'GET' | 'POST' | 'PUT';
const call = (method: Method, url: string, token: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload: payload as object }) });
const MISSING = '01900000-0000-7000-8000-000000000000';
const auditOf = async (action: string, targetId: string) =>
  json(await call('GET', `/v1/admin/audit?action=${action}&targetId=${targetId}`, admin.accessToken)).items;
const signIn = (email: string, password: string) => t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });

describe('user search and the admin view', () => {
  it('finds accounts by a substring of email, name or handle, filters by role and status, pages with a cursor', async () => {
    const a = await signUp(t.app, { name: 'Zebediah Quux' });
    const b = await signUp(t.app, { name: 'Zebediah Other' });
    const byName = json(await call('GET', '/v1/admin/users?q=zebediah', admin.accessToken));
    expect(byName.items.map((u: { id: string }) => u.id)).toEqual([b.user.id, a.user.id]);
    expect(byName.items[0]).toMatchObject({ email: b.email, role: 'USER', status: 'ACTIVE', handle: expect.any(String) });

    const byEmail = json(await call('GET', `/v1/admin/users?q=${encodeURIComponent(a.email.slice(0, 20).toUpperCase())}`, admin.accessToken));
    expect(byEmail.items.map((u: { id: string }) => u.id)).toContain(a.user.id);
    expect(json(await call('GET', `/v1/admin/users?q=${a.user.handle}`, admin.accessToken)).items[0].id).toBe(a.user.id);
    // `%` and `_` are matched literally, not as wildcards.
    expect(json(await call('GET', '/v1/admin/users?q=%25%25%25', admin.accessToken)).items).toEqual([]);

    const supers = json(await call('GET', '/v1/admin/users?role=SUPER_ADMIN', admin.accessToken));
    expect(supers.items.map((u: { id: string }) => u.id)).toEqual([superAdmin.user.id]);

    const first = json(await call('GET', '/v1/admin/users?q=zebediah&limit=1', admin.accessToken));
    expect(first.items).toHaveLength(1);
    const second = json(await call('GET', `/v1/admin/users?q=zebediah&limit=1&cursor=${first.nextCursor}`, admin.accessToken));
    expect(second.items[0].id).toBe(a.user.id);
    expect(second.nextCursor).toBeNull();
  });

  it('refuses bad filters with 400', async () => {
    for (const query of ['role=ROOT', 'status=GONE', 'limit=0', 'colour=red', 'cursor=garbage']) {
      const response = await call('GET', `/v1/admin/users?${query}`, admin.accessToken);
      expect(response.statusCode, query).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });

  it("shows one account's profile, role, status, subscription, wallet and recent security events", async () => {
    const user = await signUp(t.app);
    const view = json(await call('GET', `/v1/admin/users/${user.user.id}`, admin.accessToken));
    expect(view.user).toMatchObject({ id: user.user.id, email: user.email, role: 'USER', status: 'ACTIVE', deletedAt: null });
    expect(view.subscription).toMatchObject({ status: expect.any(String) });
    expect(view.wallet.tokens).toBe(1_000_000);
    expect(view.recentSecurityEvents).toEqual([]);
    await signIn(user.email, user.password);
    const again = json(await call('GET', `/v1/admin/users/${user.user.id}`, admin.accessToken));
    expect(again.recentSecurityEvents.map((e: { kind: string }) => e.kind)).toEqual(['LOGIN_SUCCESS']);
  });

  it('answers 404 for an unknown account and 400 for a malformed id', async () => {
    expect(json(await call('GET', `/v1/admin/users/${MISSING}`, admin.accessToken)).error.code).toBe('NOT_FOUND');
    expect((await call('GET', '/v1/admin/users/not-a-uuid', admin.accessToken)).statusCode).toBe(400);
  });
});

describe('role changes', () => {
  it('a SUPER_ADMIN changes a role; it is audited with before and after', async () => {
    const user = await signUp(t.app);
    const response = await call('PUT', `/v1/admin/users/${user.user.id}/role`, superAdmin.accessToken, { role: 'ADMIN', reason: 'joins support' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ id: user.user.id, role: 'ADMIN' });
    const [entry] = await auditOf('user.role.change', user.user.id);
    expect(entry).toMatchObject({
      actor: { userId: superAdmin.user.id, role: 'SUPER_ADMIN' },
      before: { role: 'USER' },
      after: { role: 'ADMIN' },
      reason: 'joins support',
    });
  });

  it('an ADMIN cannot raise anyone, themselves included (403, nothing changed)', async () => {
    const user = await signUp(t.app);
    for (const [target, role] of [
      [user.user.id, 'ADMIN'],
      [admin.user.id, 'SUPER_ADMIN'],
    ] as const) {
      const response = await call('PUT', `/v1/admin/users/${target}/role`, admin.accessToken, { role });
      expect(response.statusCode).toBe(403);
      expect(json(response).error.code).toBe('FORBIDDEN');
    }
    expect((await t.services.auth.admin.get(admin.user.id)).role).toBe('ADMIN');
    expect((await t.services.auth.admin.get(user.user.id)).role).toBe('USER');
  });

  it('the last SUPER_ADMIN cannot demote themselves (409); with a second one they can', async () => {
    const refused = await call('PUT', `/v1/admin/users/${superAdmin.user.id}/role`, superAdmin.accessToken, { role: 'ADMIN' });
    expect(refused.statusCode).toBe(409);
    expect(json(refused).error.message).toMatch(/last SUPER_ADMIN/);
    expect((await t.services.auth.admin.get(superAdmin.user.id)).role).toBe('SUPER_ADMIN');

    const second = await signUpAs(t, 'SUPER_ADMIN');
    expect((await call('PUT', `/v1/admin/users/${second.user.id}/role`, second.accessToken, { role: 'USER' })).statusCode).toBe(200);
  });

  it('400 for a bad role or unknown key, 404 for an unknown account', async () => {
    expect((await call('PUT', `/v1/admin/users/${admin.user.id}/role`, superAdmin.accessToken, { role: 'ROOT' })).statusCode).toBe(400);
    expect((await call('PUT', `/v1/admin/users/${admin.user.id}/role`, superAdmin.accessToken, { role: 'USER', extra: 1 })).statusCode).toBe(400);
    expect((await call('PUT', `/v1/admin/users/${MISSING}/role`, superAdmin.accessToken, { role: 'USER' })).statusCode).toBe(404);
  });
});

describe('suspension', () => {
  it('ends every session and API key at once, refuses sign-in, and is lifted by unsuspend; both audited', async () => {
    const user = await signUp(t.app);
    await setPlan(t, user.user.id, 'starter');
    const key = await createApiKey(t, user.accessToken, ['ai:text']);
    const aiText = (credential: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(credential),
        payload: { model: 'local/text', messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
      });
    expect((await aiText(key.key)).statusCode).toBe(200);

    const suspended = await call('POST', `/v1/admin/users/${user.user.id}/suspend`, admin.accessToken, { reason: 'spam' });
    expect(suspended.statusCode).toBe(200);
    expect(json(suspended).status).toBe('SUSPENDED');
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(user.accessToken) })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: user.refreshToken } })).statusCode).toBe(401);
    expect((await aiText(key.key)).statusCode).toBe(401);
    const login = await signIn(user.email, user.password);
    expect(login.statusCode).toBe(403);
    expect(json(login).error.message).toMatch(/suspended/);
    expect(json(await call('GET', '/v1/admin/users?status=SUSPENDED', admin.accessToken)).items.map((u: { id: string }) => u.id)).toContain(user.user.id);
    expect(await auditOf('user.suspend', user.user.id)).toMatchObject([
      { before: { status: 'ACTIVE' }, after: { status: 'SUSPENDED', sessionsEnded: 1 }, reason: 'spam' },
    ]);

    expect(json(await call('POST', `/v1/admin/users/${user.user.id}/suspend`, admin.accessToken, { reason: 'again' })).error.code).toBe('CONFLICT');
    const lifted = await call('POST', `/v1/admin/users/${user.user.id}/unsuspend`, admin.accessToken, { reason: 'appeal accepted' });
    expect(json(lifted).status).toBe('ACTIVE');
    expect((await signIn(user.email, user.password)).statusCode).toBe(200);
    expect((await aiText(key.key)).statusCode).toBe(200);
    expect(await auditOf('user.unsuspend', user.user.id)).toMatchObject([
      { before: { status: 'SUSPENDED' }, after: { status: 'ACTIVE' }, reason: 'appeal accepted' },
    ]);
    expect((await call('POST', `/v1/admin/users/${user.user.id}/unsuspend`, admin.accessToken, { reason: 'again' })).statusCode).toBe(409);
  });

  it('an ADMIN cannot suspend an ADMIN, nobody a SUPER_ADMIN or themselves; bad input is a 400, unknown ids 404', async () => {
    const other = await signUpAs(t, 'ADMIN');
    expect((await call('POST', `/v1/admin/users/${other.user.id}/suspend`, admin.accessToken, { reason: 'x' })).statusCode).toBe(403);
    expect((await call('POST', `/v1/admin/users/${superAdmin.user.id}/suspend`, admin.accessToken, { reason: 'x' })).statusCode).toBe(409);
    expect((await call('POST', `/v1/admin/users/${admin.user.id}/suspend`, admin.accessToken, { reason: 'x' })).statusCode).toBe(409);
    expect((await call('POST', `/v1/admin/users/${other.user.id}/suspend`, admin.accessToken, {})).statusCode).toBe(400);
    expect((await call('POST', `/v1/admin/users/${other.user.id}/suspend`, admin.accessToken, { reason: '   ' })).statusCode).toBe(400);
    expect((await call('POST', `/v1/admin/users/${MISSING}/suspend`, admin.accessToken, { reason: 'x' })).statusCode).toBe(404);
    expect((await t.services.auth.admin.get(other.user.id)).status).toBe('ACTIVE');
    // A SUPER_ADMIN may suspend an ADMIN.
    expect((await call('POST', `/v1/admin/users/${other.user.id}/suspend`, superAdmin.accessToken, { reason: 'left the team' })).statusCode).toBe(200);
  });
});

describe('lifting a suspension', () => {
  it('an ADMIN cannot lift the suspension of an ADMIN or a SUPER_ADMIN (403, still suspended, nothing audited); a SUPER_ADMIN can', async () => {
    const suspendedAdmin = await signUpAs(t, 'ADMIN');
    expect((await call('POST', `/v1/admin/users/${suspendedAdmin.user.id}/suspend`, superAdmin.accessToken, { reason: 'compromised' })).statusCode).toBe(200);
    // A suspended account promoted to SUPER_ADMIN stays suspended.
    const suspendedSuper = await signUp(t.app);
    expect((await call('POST', `/v1/admin/users/${suspendedSuper.user.id}/suspend`, admin.accessToken, { reason: 'fraud' })).statusCode).toBe(200);
    expect((await call('PUT', `/v1/admin/users/${suspendedSuper.user.id}/role`, superAdmin.accessToken, { role: 'SUPER_ADMIN' })).statusCode).toBe(200);

    for (const [target, role] of [
      [suspendedAdmin, 'ADMIN'],
      [suspendedSuper, 'SUPER_ADMIN'],
    ] as const) {
      const refused = await call('POST', `/v1/admin/users/${target.user.id}/unsuspend`, admin.accessToken, { reason: 'my friend' });
      expect(refused.statusCode).toBe(403);
      expect(json(refused).error).toMatchObject({ code: 'FORBIDDEN', message: `Only a SUPER_ADMIN can lift the suspension of an ${role} account.` });
      expect((await t.services.auth.admin.get(target.user.id)).status).toBe('SUSPENDED');
      expect((await signIn(target.email, target.password)).statusCode).toBe(403);
      // Like a refused suspension, a refused lifting writes nothing.
      expect(await auditOf('user.unsuspend', target.user.id)).toEqual([]);
    }

    const lifted = await call('POST', `/v1/admin/users/${suspendedAdmin.user.id}/unsuspend`, superAdmin.accessToken, { reason: 'password reset done' });
    expect(lifted.statusCode).toBe(200);
    expect(json(lifted)).toMatchObject({ status: 'ACTIVE', role: 'ADMIN' });
    expect(await auditOf('user.unsuspend', suspendedAdmin.user.id)).toMatchObject([
      {
        actor: { userId: superAdmin.user.id, role: 'SUPER_ADMIN' },
        before: { status: 'SUSPENDED' },
        after: { status: 'ACTIVE' },
        reason: 'password reset done',
      },
    ]);
    expect((await signIn(suspendedAdmin.email, suspendedAdmin.password)).statusCode).toBe(200);
  });

  it('a SUPER_ADMIN demoted to ADMIN, with an access token still saying SUPER_ADMIN, acts with the ADMIN rules at once', async () => {
    const demoted = await signUpAs(t, 'SUPER_ADMIN');
    const suspendedAdmin = await signUpAs(t, 'ADMIN');
    expect((await call('POST', `/v1/admin/users/${suspendedAdmin.user.id}/suspend`, superAdmin.accessToken, { reason: 'investigation' })).statusCode).toBe(200);
    const activeAdmin = await signUpAs(t, 'ADMIN');
    expect((await call('PUT', `/v1/admin/users/${demoted.user.id}/role`, superAdmin.accessToken, { role: 'ADMIN' })).statusCode).toBe(200);

    expect((await call('POST', `/v1/admin/users/${suspendedAdmin.user.id}/unsuspend`, demoted.accessToken, { reason: 'x' })).statusCode).toBe(403);
    expect((await call('POST', `/v1/admin/users/${activeAdmin.user.id}/suspend`, demoted.accessToken, { reason: 'x' })).statusCode).toBe(403);
    expect((await t.services.auth.admin.get(suspendedAdmin.user.id)).status).toBe('SUSPENDED');
    expect((await t.services.auth.admin.get(activeAdmin.user.id)).status).toBe('ACTIVE');
    // What they may still do is audited with the role they hold now.
    const user = await signUp(t.app);
    expect((await call('POST', `/v1/admin/users/${user.user.id}/suspend`, demoted.accessToken, { reason: 'spam' })).statusCode).toBe(200);
    expect(await auditOf('user.suspend', user.user.id)).toMatchObject([{ actor: { userId: demoted.user.id, role: 'ADMIN' } }]);
  });
});

describe('impersonation', () => {
  it("issues a short-lived token marked with the operator, recorded on the target's security events and audited", async () => {
    const user = await signUp(t.app);
    const response = await call('POST', `/v1/admin/users/${user.user.id}/impersonate`, superAdmin.accessToken, { reason: 'ticket 42' });
    expect(response.statusCode).toBe(200);
    const issued = json(response);
    expect(issued).toMatchObject({ tokenType: 'Bearer', expiresIn: 600, user: { id: user.user.id } });
    const claims = JSON.parse(Buffer.from(issued.accessToken.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ sub: user.user.id, act: { sub: superAdmin.user.id } });

    // The token works as the user...
    const me = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(issued.accessToken) });
    expect(json(me).user.id).toBe(user.user.id);
    // ...and the user sees it in their own security history and session list.
    const events = json(await t.app.inject({ method: 'GET', url: '/v1/account/security/events', headers: bearer(user.accessToken) }));
    expect(events.items[0]).toMatchObject({
      kind: 'IMPERSONATED_BY_ADMIN',
      metadata: { adminId: superAdmin.user.id, reason: 'ticket 42', sessionId: issued.sessionId },
    });
    const sessions = json(await t.app.inject({ method: 'GET', url: '/v1/account/sessions', headers: bearer(user.accessToken) }));
    expect(sessions.items.map((s: { id: string }) => s.id)).toContain(issued.sessionId);
    expect(await auditOf('user.impersonate', user.user.id)).toMatchObject([
      { actor: { userId: superAdmin.user.id }, reason: 'ticket 42', after: { sessionId: issued.sessionId } },
    ]);

    // It cannot take the account over.
    for (const [method, url, payload] of [
      ['POST', '/v1/account/password/change', { currentPassword: user.password, newPassword: 'another long password' }],
      ['POST', '/v1/account/2fa/setup', {}],
      ['POST', '/v1/account/api-keys', { label: 'x', scopes: ['ai:text'] }],
      ['POST', '/v1/account/sessions/revoke-others', {}],
      ['POST', '/v1/account/delete', { password: user.password }],
    ] as const) {
      const refused = await t.app.inject({ method, url, headers: bearer(issued.accessToken), payload });
      expect(refused.statusCode, url).toBe(403);
      expect(json(refused).error.message).toMatch(/impersonation token/);
    }
    // The user ends it by signing out the support session.
    await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${issued.sessionId}`, headers: bearer(user.accessToken) });
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(issued.accessToken) })).statusCode).toBe(401);
  });

  it('is SUPER_ADMIN only, needs a reason, refuses operators and suspended or unknown accounts', async () => {
    const user = await signUp(t.app);
    expect((await call('POST', `/v1/admin/users/${user.user.id}/impersonate`, admin.accessToken, { reason: 'x' })).statusCode).toBe(403);
    expect((await call('POST', `/v1/admin/users/${user.user.id}/impersonate`, superAdmin.accessToken, {})).statusCode).toBe(400);
    expect((await call('POST', `/v1/admin/users/${admin.user.id}/impersonate`, superAdmin.accessToken, { reason: 'x' })).statusCode).toBe(409);
    expect((await call('POST', `/v1/admin/users/${MISSING}/impersonate`, superAdmin.accessToken, { reason: 'x' })).statusCode).toBe(404);
    await call('POST', `/v1/admin/users/${user.user.id}/suspend`, admin.accessToken, { reason: 'x' });
    expect((await call('POST', `/v1/admin/users/${user.user.id}/impersonate`, superAdmin.accessToken, { reason: 'x' })).statusCode).toBe(409);
    expect(
      json(await t.app.inject({ method: 'GET', url: `/v1/admin/users/${user.user.id}`, headers: bearer(admin.accessToken) })).recentSecurityEvents.map(
        (e: { kind: string }) => e.kind,
      ),
    ).not.toContain('IMPERSONATED_BY_ADMIN');
  });
});

describe('support grants', () => {
  it('adds a GRANT ledger row with the reason; the same key never grants twice; audited once', async () => {
    const user = await signUp(t.app);
    const body = { tokens: 5000, reason: 'outage credit', idempotencyKey: `grant-${user.user.id}` };
    const first = await call('POST', `/v1/admin/users/${user.user.id}/grants`, superAdmin.accessToken, body);
    expect(first.statusCode).toBe(201);
    expect(json(first)).toMatchObject({ applied: true, tokens: 5000, balance: 1_005_000, idempotencyKey: body.idempotencyKey });
    const retries = await Promise.all([1, 2, 3].map(() => call('POST', `/v1/admin/users/${user.user.id}/grants`, superAdmin.accessToken, body)));
    for (const retry of retries) expect(json(retry)).toMatchObject({ applied: false, ledgerEntryId: json(first).ledgerEntryId, balance: 1_005_000 });
    expect((await t.services.wallet.balance({ userId: user.user.id })).tokens).toBe(1_005_000);
    const ledger = json(await t.app.inject({ method: 'GET', url: '/v1/credits/transactions', headers: bearer(user.accessToken) }));
    expect(ledger.items[0]).toMatchObject({ kind: 'GRANT', amount: 5000, note: 'outage credit' });
    expect(await auditOf('wallet.grant', user.user.id)).toMatchObject([
      { before: { balance: 1_000_000 }, after: { balance: 1_005_000, tokens: 5000 }, reason: 'outage credit' },
    ]);

    // The same key for another amount is a mistake, not a retry.
    const clash = await call('POST', `/v1/admin/users/${user.user.id}/grants`, superAdmin.accessToken, { ...body, tokens: 6000 });
    expect(clash.statusCode).toBe(409);
    // Without a key, one is generated and returned.
    const generated = json(await call('POST', `/v1/admin/users/${user.user.id}/grants`, superAdmin.accessToken, { tokens: 1, reason: 'goodwill' }));
    expect(generated).toMatchObject({ applied: true, idempotencyKey: expect.any(String), balance: 1_005_001 });
  });

  it('is SUPER_ADMIN only; a reason is mandatory; bad amounts are 400; unknown accounts 404', async () => {
    const user = await signUp(t.app);
    const url = `/v1/admin/users/${user.user.id}/grants`;
    expect((await call('POST', url, admin.accessToken, { tokens: 10, reason: 'x' })).statusCode).toBe(403);
    for (const body of [{ tokens: 10 }, { tokens: 0, reason: 'x' }, { tokens: 1.5, reason: 'x' }, { tokens: '10', reason: 'x' }, { tokens: 10, reason: '' }]) {
      expect((await call('POST', url, superAdmin.accessToken, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await call('POST', `/v1/admin/users/${MISSING}/grants`, superAdmin.accessToken, { tokens: 10, reason: 'x' })).statusCode).toBe(404);
    expect((await t.services.wallet.balance({ userId: user.user.id })).tokens).toBe(1_000_000);
  });
});

describe("the service's own internal account", () => {
  it('takes no role, suspension or impersonation from any operator (409, nothing changes, nothing audited)', async () => {
    const internal = (await t.services.auth.data.users.findInternal('PLAYGROUND'))!;
    const attempts = [
      call('PUT', `/v1/admin/users/${internal.id}/role`, superAdmin.accessToken, { role: 'SUPER_ADMIN', reason: 'take it over' }),
      call('POST', `/v1/admin/users/${internal.id}/suspend`, superAdmin.accessToken, { reason: 'break the playground' }),
      call('POST', `/v1/admin/users/${internal.id}/impersonate`, superAdmin.accessToken, { reason: 'read operators prompts' }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.statusCode, response.body).toBe(409);
      expect(json(response).error.message).toMatch(/internal accounts/);
    }
    expect(await t.services.auth.data.users.findInternal('PLAYGROUND')).toMatchObject({ role: internal.role, status: 'ACTIVE' });
    for (const action of ['user.role.change', 'user.suspend', 'user.impersonate']) expect(await auditOf(action, internal.id)).toEqual([]);
  });
});
