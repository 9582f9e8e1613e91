import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditWriterFor, CLI_ACTOR } from '../../src/modules/audit/service.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../helpers/test-app.js';

/**
 * Who may lift a suspension depends on who imposed it, not only on the account's role: an ADMIN lifts the suspension
 * of a USER that an ADMIN imposed, never one a SUPER_ADMIN (or the CLI) imposed.
 */
let t: TestApp;
let superAdmin: Awaited<ReturnType<typeof signUpAs>>;
let admin: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp();
  superAdmin = await signUpAs(t, 'SUPER_ADMIN');
  admin = await signUpAs(t, 'ADMIN');
});
afterAll(async () => t?.close());

const post = (url: string, token: string, payload: object) => t.app.inject({ method: 'POST', url, headers: bearer(token), payload });
const suspend = (userId: string, token: string) => post(`/v1/admin/users/${userId}/suspend`, token, { reason: 'abuse' });
const unsuspend = (userId: string, token: string) => post(`/v1/admin/users/${userId}/unsuspend`, token, { reason: 'appeal' });
const auditOf = async (action: string, targetId: string) =>
  json(await t.app.inject({ method: 'GET', url: `/v1/admin/audit?action=${action}&targetId=${targetId}`, headers: bearer(admin.accessToken) })).items;

describe('lifting a suspension follows who imposed it', () => {
  it("an ADMIN cannot lift a SUPER_ADMIN's suspension of a USER (403, still suspended, nothing audited); a SUPER_ADMIN can", async () => {
    const user = await signUp(t.app);
    expect((await suspend(user.user.id, superAdmin.accessToken)).statusCode).toBe(200);
    expect(await auditOf('user.suspend', user.user.id)).toMatchObject([{ after: { status: 'SUSPENDED', suspendedByRole: 'SUPER_ADMIN' } }]);

    const refused = await unsuspend(user.user.id, admin.accessToken);
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error).toMatchObject({ code: 'FORBIDDEN', message: 'This suspension was imposed by a SUPER_ADMIN: only a SUPER_ADMIN can lift it.' });
    expect((await t.services.auth.admin.get(user.user.id)).status).toBe('SUSPENDED');
    expect(await auditOf('user.unsuspend', user.user.id)).toEqual([]);

    expect((await unsuspend(user.user.id, superAdmin.accessToken)).statusCode).toBe(200);
    const lifted = await t.services.auth.admin.get(user.user.id);
    expect(lifted).toMatchObject({ status: 'ACTIVE', suspendedByRole: null });
    expect(await auditOf('user.unsuspend', user.user.id)).toMatchObject([
      { before: { status: 'SUSPENDED', suspendedByRole: 'SUPER_ADMIN' }, after: { status: 'ACTIVE' } },
    ]);
  });

  it("an ADMIN lifts an ADMIN's suspension of a USER, and a SUPER_ADMIN does too", async () => {
    for (const lifter of [admin, superAdmin]) {
      const user = await signUp(t.app);
      expect((await suspend(user.user.id, admin.accessToken)).statusCode).toBe(200);
      expect((await t.services.auth.admin.get(user.user.id)).suspendedByRole).toBe('ADMIN');
      expect((await unsuspend(user.user.id, lifter.accessToken)).statusCode).toBe(200);
    }
  });

  it('a suspension from the CLI is lifted by a SUPER_ADMIN, not by an ADMIN', async () => {
    const user = await signUp(t.app);
    await t.services.auth.admin.suspend(CLI_ACTOR, user.user.id, 'abuse', { ip: null, userAgent: null }, auditWriterFor(t.services.audit, CLI_ACTOR));
    const refused = await unsuspend(user.user.id, admin.accessToken);
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error.message).toBe('This suspension was imposed from the command line: only a SUPER_ADMIN can lift it.');
    expect((await unsuspend(user.user.id, superAdmin.accessToken)).statusCode).toBe(200);
  });

  it('the next suspension records its own suspender: a SUPER_ADMIN lifting and an ADMIN suspending again leaves it to ADMINs', async () => {
    const user = await signUp(t.app);
    expect((await suspend(user.user.id, superAdmin.accessToken)).statusCode).toBe(200);
    expect((await unsuspend(user.user.id, superAdmin.accessToken)).statusCode).toBe(200);
    expect((await suspend(user.user.id, admin.accessToken)).statusCode).toBe(200);
    expect((await unsuspend(user.user.id, admin.accessToken)).statusCode).toBe(200);
  });
});
