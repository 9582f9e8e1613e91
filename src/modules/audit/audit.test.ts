import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../../../test/helpers/test-app.js';
import { CLI_ACTOR } from './service.js';

let t: TestApp;
let admin: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp();
  admin = await signUpAs(t, 'ADMIN');
});
afterAll(async () => t?.close());

const list = async (query = '') => t.app.inject({ method: 'GET', url: `/v1/admin/audit${query}`, headers: bearer(admin.accessToken) });

describe('admin audit trail', () => {
  it('lists entries newest first with actor, before and after, filtered and cursor-paged', async () => {
    const actor = { userId: admin.user.id, role: 'ADMIN', requestId: 'req-1' };
    await t.services.audit.record(actor, {
      action: 'model.update',
      targetType: 'model',
      targetId: 'm1',
      before: { status: 'ACTIVE' },
      after: { status: 'RETIRING' },
    });
    t.clock.advance(1000);
    await t.services.audit.record(CLI_ACTOR, { action: 'wallet.grant', targetType: 'user', targetId: 'u1', after: { tokens: 5 }, reason: 'support' });
    t.clock.advance(1000);
    await t.services.audit.record(actor, { action: 'model.update', targetType: 'model', targetId: 'm2', before: null, after: { status: 'DISABLED' } });

    const all = json(await list());
    expect(all.items.map((e: { targetId: string }) => e.targetId)).toEqual(['m2', 'u1', 'm1']);
    expect(all.items[2]).toMatchObject({
      actor: { userId: admin.user.id, role: 'ADMIN' },
      action: 'model.update',
      before: { status: 'ACTIVE' },
      after: { status: 'RETIRING' },
      requestId: 'req-1',
    });
    expect(all.items[1]).toMatchObject({ actor: { userId: null, role: 'CLI' }, reason: 'support', before: null });

    expect(json(await list('?action=model.update')).items).toHaveLength(2);
    expect(json(await list('?targetType=model&targetId=m1')).items).toHaveLength(1);
    expect(json(await list(`?actorId=${admin.user.id}`)).items).toHaveLength(2);

    const first = json(await list('?limit=2'));
    expect(first.items).toHaveLength(2);
    const second = json(await list(`?limit=2&cursor=${first.nextCursor}`));
    expect(second.items.map((e: { targetId: string }) => e.targetId)).toEqual(['m1']);
    expect(second.nextCursor).toBeNull();
  });

  it('refuses a broken cursor and an unknown filter with 400', async () => {
    expect((await list('?cursor=garbage')).statusCode).toBe(400);
    const unknown = await list('?colour=red');
    expect(unknown.statusCode).toBe(400);
    expect(json(unknown).error.code).toBe('BAD_REQUEST');
  });
});
