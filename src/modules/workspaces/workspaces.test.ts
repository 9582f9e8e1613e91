import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceMembers } from '../../db/schema/workspaces.js';
import { verifyEmail } from '../../../test/helpers/email-verification.js';
import { bearer, createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const call = (token: string, method: Method, url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });

async function workspaceWith(name = 'Acme Studio') {
  const owner = await signUp(t.app);
  const response = await call(owner.accessToken, 'POST', '/v1/workspaces', { name });
  expect(response.statusCode).toBe(201);
  return { owner, workspace: json(response) };
}

/** A new account whose email is verified (only those may answer an invitation). */
async function signUpVerified() {
  const account = await signUp(t.app);
  await verifyEmail(t, account);
  return account;
}

/** Invites a new user with `role` and has them accept; returns the member's session. */
async function join(inviterToken: string, workspaceId: string, role?: 'ADMIN' | 'MEMBER') {
  const member = await signUpVerified();
  const invited = await call(inviterToken, 'POST', `/v1/workspaces/${workspaceId}/invitations`, { email: member.email, ...(role ? { role } : {}) });
  expect(invited.statusCode).toBe(201);
  const accepted = await call(member.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token: json(invited).token });
  expect(accepted.statusCode).toBe(200);
  return member;
}

describe('workspaces', () => {
  it("creates with the caller as OWNER, lists the caller's workspaces with role and member count, 404 for outsiders", async () => {
    const { owner, workspace } = await workspaceWith('Acme Studio');
    expect(workspace).toEqual({
      id: expect.any(String),
      name: 'Acme Studio',
      slug: 'acme-studio',
      role: 'OWNER',
      memberCount: 1,
      createdAt: expect.any(String),
    });
    // the same name again gets a free slug
    expect(json(await call(owner.accessToken, 'POST', '/v1/workspaces', { name: 'Acme Studio' })).slug).toMatch(/^acme-studio-[0-9a-f]{6}$/);
    const taken = await call(owner.accessToken, 'POST', '/v1/workspaces', { name: 'Other', slug: 'acme-studio' });
    expect(taken.statusCode).toBe(409);
    expect(json(taken).error.message).toMatch(/slug "acme-studio" is taken/);
    for (const bad of [{ name: '' }, { name: 'x', slug: 'No Caps' }, { name: 'x', slug: 'ab' }, { name: 'x', extra: 1 }]) {
      expect((await call(owner.accessToken, 'POST', '/v1/workspaces', bad)).statusCode).toBe(400);
    }
    const listed = json(await call(owner.accessToken, 'GET', '/v1/workspaces')).items;
    expect(listed.map((w: { slug: string; role: string }) => [w.slug, w.role])).toEqual([
      ['acme-studio', 'OWNER'],
      [expect.stringMatching(/^acme-studio-/), 'OWNER'],
    ]);
    expect(json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}`))).toMatchObject({ id: workspace.id, role: 'OWNER', memberCount: 1 });

    const outsider = await signUp(t.app);
    for (const [method, url, payload] of [
      ['GET', `/v1/workspaces/${workspace.id}`],
      ['PATCH', `/v1/workspaces/${workspace.id}`, { name: 'Mine now' }],
      ['DELETE', `/v1/workspaces/${workspace.id}`],
      ['GET', `/v1/workspaces/${workspace.id}/members`],
      ['POST', `/v1/workspaces/${workspace.id}/invitations`, { email: outsider.email }],
      ['GET', `/v1/workspaces/${workspace.id}/invitations`],
    ] as Array<[Method, string, object?]>) {
      const response = await call(outsider.accessToken, method, url, payload);
      expect({ url, method, status: response.statusCode }).toEqual({ url, method, status: 404 });
    }
    expect(json(await call(outsider.accessToken, 'GET', '/v1/workspaces')).items).toEqual([]);
  });

  it('applies the role rules: members read, admins manage members and the workspace, the owner deletes and transfers', async () => {
    const { owner, workspace } = await workspaceWith('Roles Inc');
    const admin = await join(owner.accessToken, workspace.id, 'ADMIN');
    const member = await join(admin.accessToken, workspace.id);
    const other = await join(owner.accessToken, workspace.id);
    const url = `/v1/workspaces/${workspace.id}`;

    const members = json(await call(member.accessToken, 'GET', `${url}/members`)).items;
    expect(members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
      [owner.email, 'OWNER'],
      [admin.email, 'ADMIN'],
      [member.email, 'MEMBER'],
      [other.email, 'MEMBER'],
    ]);
    expect(json(await call(member.accessToken, 'GET', url))).toMatchObject({ role: 'MEMBER', memberCount: 4 });

    // a MEMBER can read but not change anything
    const refusals: Array<[Method, string, object?]> = [
      ['PATCH', url, { name: 'Nope' }],
      ['DELETE', url],
      ['PATCH', `${url}/members/${other.user.id}`, { role: 'ADMIN' }],
      ['DELETE', `${url}/members/${other.user.id}`],
      ['POST', `${url}/invitations`, { email: uniqueEmail() }],
      ['GET', `${url}/invitations`],
    ];
    for (const [method, path, payload] of refusals) {
      const response = await call(member.accessToken, method, path, payload);
      expect({ path, method, status: response.statusCode, code: json(response).error.code }).toEqual({ path, method, status: 403, code: 'FORBIDDEN' });
    }
    expect(json(await call(member.accessToken, 'PATCH', url, { name: 'Nope' })).error.message).toMatch(
      /Only a workspace admin or the owner can change the workspace; your role in this workspace is MEMBER/,
    );

    // an ADMIN renames, sets ADMIN/MEMBER roles, removes members; cannot delete, transfer or touch the owner
    expect(json(await call(admin.accessToken, 'PATCH', url, { name: 'Roles Ltd', slug: 'roles-ltd' }))).toMatchObject({
      name: 'Roles Ltd',
      slug: 'roles-ltd',
      role: 'ADMIN',
    });
    expect(json(await call(admin.accessToken, 'PATCH', `${url}/members/${member.user.id}`, { role: 'ADMIN' }))).toMatchObject({
      userId: member.user.id,
      role: 'ADMIN',
    });
    expect(json(await call(admin.accessToken, 'PATCH', `${url}/members/${member.user.id}`, { role: 'MEMBER' }))).toMatchObject({ role: 'MEMBER' });
    expect((await call(admin.accessToken, 'DELETE', url)).statusCode).toBe(403);
    expect((await call(admin.accessToken, 'PATCH', `${url}/members/${member.user.id}`, { role: 'OWNER' })).statusCode).toBe(403);
    const ownerRole = await call(admin.accessToken, 'PATCH', `${url}/members/${owner.user.id}`, { role: 'MEMBER' });
    expect(ownerRole.statusCode).toBe(400);
    expect(json(ownerRole).error.message).toMatch(/only by a transfer/);
    expect((await call(admin.accessToken, 'DELETE', `${url}/members/${owner.user.id}`)).statusCode).toBe(400);
    expect(json(await call(admin.accessToken, 'DELETE', `${url}/members/${other.user.id}`))).toEqual({ ok: true });
    expect((await call(other.accessToken, 'GET', url)).statusCode).toBe(404);
    expect((await call(admin.accessToken, 'PATCH', `${url}/members/${other.user.id}`, { role: 'ADMIN' })).statusCode).toBe(404);

    // a member leaves by removing themselves
    const leaver = await join(owner.accessToken, workspace.id);
    expect(json(await call(leaver.accessToken, 'DELETE', `${url}/members/${leaver.user.id}`))).toEqual({ ok: true });
    expect(json(await call(leaver.accessToken, 'GET', '/v1/workspaces')).items).toEqual([]);

    // the owner cannot leave before transferring
    const stay = await call(owner.accessToken, 'DELETE', `${url}/members/${owner.user.id}`);
    expect(stay.statusCode).toBe(400);
    expect(json(stay).error.message).toMatch(/first transfer ownership/);

    // transfer: the member becomes OWNER, the previous owner ADMIN, in one step; exactly one owner remains
    expect(json(await call(owner.accessToken, 'PATCH', `${url}/members/${member.user.id}`, { role: 'OWNER' }))).toMatchObject({
      userId: member.user.id,
      role: 'OWNER',
    });
    const roles = await t.platform.db.select().from(workspaceMembers).where(eq(workspaceMembers.workspaceId, workspace.id));
    expect(Object.fromEntries(roles.map((r) => [r.userId, r.role]))).toEqual({ [owner.user.id]: 'ADMIN', [admin.user.id]: 'ADMIN', [member.user.id]: 'OWNER' });
    expect((await call(owner.accessToken, 'DELETE', url)).statusCode).toBe(403);
    // now the former owner may leave, and the new owner deletes the workspace
    expect(json(await call(owner.accessToken, 'DELETE', `${url}/members/${owner.user.id}`))).toEqual({ ok: true });
    expect(json(await call(member.accessToken, 'DELETE', url))).toEqual({ ok: true });
    expect((await call(member.accessToken, 'GET', url)).statusCode).toBe(404);
    expect(await t.platform.db.select().from(workspaceMembers).where(eq(workspaceMembers.workspaceId, workspace.id))).toEqual([]);
  });
});

describe('account deletion', () => {
  it('is refused while the account owns a shared workspace, and otherwise ends its memberships and its own solo workspace', async () => {
    const { owner, workspace } = await workspaceWith('Shared');
    const member = await join(owner.accessToken, workspace.id);
    const refused = await call(owner.accessToken, 'POST', '/v1/account/delete', { password: owner.password });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toMatch(/You own the workspace "Shared", which has other members. Transfer its ownership/);
    expect(json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}`)).memberCount).toBe(2);

    const solo = json(await call(member.accessToken, 'POST', '/v1/workspaces', { name: 'Solo' }));
    expect(json(await call(member.accessToken, 'POST', '/v1/account/delete', { password: member.password }))).toEqual({ ok: true });
    expect(json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}`)).memberCount).toBe(1);
    expect(await t.platform.db.select().from(workspaceMembers).where(eq(workspaceMembers.workspaceId, solo.id))).toEqual([]);
    expect(json(await call(owner.accessToken, 'POST', '/v1/account/delete', { password: owner.password }))).toEqual({ ok: true });
  });
});

describe('invitations', () => {
  it('a wsi_ token for the invited email joins once with the invited role; the list shows each status', async () => {
    const { owner, workspace } = await workspaceWith('Invites');
    const invitee = await signUpVerified();
    const created = await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: invitee.email.toUpperCase(), role: 'ADMIN' });
    expect(created.statusCode).toBe(201);
    const { token, invitation } = json(created);
    expect(token).toMatch(/^wsi_[A-Za-z0-9_-]{43}$/);
    expect(invitation).toEqual({
      id: expect.any(String),
      workspaceId: workspace.id,
      email: invitee.email,
      role: 'ADMIN',
      status: 'PENDING',
      expiresAt: new Date(t.clock.now().getTime() + 7 * 24 * 3600 * 1000).toISOString(),
      createdAt: expect.any(String),
    });

    // someone else cannot use it, and nothing changes
    const stranger = await signUp(t.app);
    const wrong = await call(stranger.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token });
    expect(wrong.statusCode).toBe(403);
    expect(json(wrong).error.message).toMatch(/sent to another email address/);
    expect(json(await call(stranger.accessToken, 'GET', '/v1/workspaces')).items).toEqual([]);

    const accepted = await call(invitee.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token });
    expect(accepted.statusCode).toBe(200);
    expect(json(accepted)).toMatchObject({ id: workspace.id, role: 'ADMIN', memberCount: 2 });
    const reused = await call(invitee.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token });
    expect(reused.statusCode).toBe(400);
    expect(json(reused).error.message).toMatch(/already been used/);
    expect((await call(invitee.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token: 'wsi_unknown' })).statusCode).toBe(400);
    // inviting someone who is already a member
    expect((await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: invitee.email })).statusCode).toBe(409);
    expect((await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: invitee.email, role: 'OWNER' })).statusCode).toBe(400);

    const list = json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}/invitations`)).items;
    expect(list.map((i: { email: string; status: string }) => [i.email, i.status])).toEqual([[invitee.email, 'ACCEPTED']]);
  });

  it('expired, declined and withdrawn tokens give 400 with their own message; a new invitation replaces a pending one', async () => {
    const { owner, workspace } = await workspaceWith('Expiry');
    const invite = async (email: string) => json(await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email }));
    const late = await signUp(t.app);
    const lateInvite = await invite(late.email);
    t.clock.advance(7 * 24 * 3600 * 1000 + 1);
    // access tokens last 15 minutes: everyone signs in again after the week
    const fresh = await signUpVerified();
    const relogin = json(await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: late.email, password: late.password } })).accessToken;
    const expired = await call(relogin, 'POST', '/v1/workspaces/invitations/accept', { token: lateInvite.token });
    expect(expired.statusCode).toBe(400);
    expect(json(expired).error.message).toMatch(/expired on .* \(invitations are valid 7 days\)/);
    const ownerToken = json(
      await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: owner.email, password: owner.password } }),
    ).accessToken;

    const declining = json(await call(ownerToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: fresh.email }));
    expect(json(await call(fresh.accessToken, 'POST', '/v1/workspaces/invitations/decline', { token: declining.token }))).toEqual({ ok: true });
    const afterDecline = await call(fresh.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token: declining.token });
    expect(afterDecline.statusCode).toBe(400);
    expect(json(afterDecline).error.message).toMatch(/declined/);

    const first = json(await call(ownerToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: fresh.email }));
    const second = json(await call(ownerToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: fresh.email }));
    const replaced = await call(fresh.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token: first.token });
    expect(json(replaced).error.message).toMatch(/withdrawn/);
    expect(json(await call(ownerToken, 'DELETE', `/v1/workspaces/${workspace.id}/invitations/${second.invitation.id}`))).toEqual({ ok: true });
    const withdrawn = await call(fresh.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token: second.token });
    expect(withdrawn.statusCode).toBe(400);
    expect(json(withdrawn).error.message).toMatch(/withdrawn/);
    expect(json(await call(fresh.accessToken, 'GET', '/v1/workspaces')).items).toEqual([]);
    const statuses = json(await call(ownerToken, 'GET', `/v1/workspaces/${workspace.id}/invitations`)).items.map((i: { status: string }) => i.status);
    expect(statuses).toEqual(['REVOKED', 'REVOKED', 'DECLINED', 'EXPIRED']);
  });

  it('an account whose email is not verified cannot answer an invitation to that address (403), and nothing changes', async () => {
    const { owner, workspace } = await workspaceWith('Verified Only');
    // Whoever signs up with the invited address, without proving they own it, and holds the link.
    const claimant = await signUp(t.app);
    const { token } = json(await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: claimant.email, role: 'ADMIN' }));
    for (const action of ['accept', 'decline']) {
      const refused = await call(claimant.accessToken, 'POST', `/v1/workspaces/invitations/${action}`, { token });
      expect({ action, status: refused.statusCode, code: json(refused).error.code }).toEqual({ action, status: 403, code: 'EMAIL_NOT_VERIFIED' });
      expect(json(refused).error.message).toMatch(/Verify your email address .* POST \/v1\/account\/verify-email\/send/);
    }
    expect(json(await call(claimant.accessToken, 'GET', '/v1/workspaces')).items).toEqual([]);
    expect(json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}`)).memberCount).toBe(1);
    expect(json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}/invitations`)).items.map((i: { status: string }) => i.status)).toEqual([
      'PENDING',
    ]);

    // Once the address is verified, the same link works.
    await verifyEmail(t, claimant);
    expect(json(await call(claimant.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token }))).toMatchObject({
      id: workspace.id,
      role: 'ADMIN',
      memberCount: 2,
    });
  });

  it('two concurrent accepts of one token create one membership', async () => {
    const { owner, workspace } = await workspaceWith('Race');
    const invitee = await signUpVerified();
    const { token } = json(await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: invitee.email }));
    const answers = await Promise.all([1, 2, 3].map(() => call(invitee.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token })));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 400, 400]);
    expect(json(await call(owner.accessToken, 'GET', `/v1/workspaces/${workspace.id}`)).memberCount).toBe(2);
  });
});
