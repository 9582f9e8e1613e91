import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, publish, type Member } from '../../../test/helpers/community.js';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
let admin: Awaited<ReturnType<typeof signUpAs>>;
let author: Member;
let reporter: Member;
let second: Member;

beforeAll(async () => {
  t = await createTestApp();
  admin = await signUpAs(t, 'ADMIN');
  [author, reporter, second] = [await member(t, 'Author'), await member(t, 'Reporter'), await member(t, 'Second')];
});
afterAll(async () => t?.close());

const MISSING = '01900000-0000-7000-8000-000000000000';
const asAdmin = (method: 'GET' | 'POST', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(admin.accessToken), ...(payload ? { payload } : {}) });
const report = async (who: Member, targetType: string, targetId: string, reason = 'spam') =>
  json(await t.app.inject({ method: 'POST', url: '/v1/community/reports', headers: who.headers, payload: { targetType, targetId, reason } }));
const auditOf = async (action: string, targetId: string) => json(await asAdmin('GET', `/v1/admin/audit?action=${action}&targetId=${targetId}`)).items;

describe('moderation queue', () => {
  it('lists reports newest first, filtered by status and target type, cursor-paged', async () => {
    const post = await publish(t, author);
    const a = await report(reporter, 'POST', post.id);
    const b = await report(reporter, 'USER', author.id, 'impersonates someone');
    const all = json(await asAdmin('GET', '/v1/admin/reports?status=OPEN'));
    expect(all.items.slice(0, 2).map((r: { id: string }) => r.id)).toEqual([b.id, a.id]);
    expect(all.items[1]).toMatchObject({
      reporterId: reporter.id,
      targetType: 'POST',
      targetId: post.id,
      reason: 'spam',
      status: 'OPEN',
      resolvedAt: null,
      resolvedBy: null,
    });
    expect(json(await asAdmin('GET', '/v1/admin/reports?targetType=USER')).items.map((r: { id: string }) => r.id)).toContain(b.id);
    expect(json(await asAdmin('GET', '/v1/admin/reports?targetType=USER')).items.map((r: { id: string }) => r.id)).not.toContain(a.id);
    const first = json(await asAdmin('GET', '/v1/admin/reports?limit=1'));
    const next = json(await asAdmin('GET', `/v1/admin/reports?limit=1&cursor=${first.nextCursor}`));
    expect([first.items[0].id, next.items[0].id]).toEqual([b.id, a.id]);
    expect(json(await asAdmin('GET', `/v1/admin/reports/${a.id}`)).id).toBe(a.id);
  });

  it('refuses bad filters (400) and unknown reports (404)', async () => {
    for (const query of ['status=CLOSED', 'targetType=WORK', 'limit=1000', 'sort=old'])
      expect((await asAdmin('GET', `/v1/admin/reports?${query}`)).statusCode, query).toBe(400);
    expect((await asAdmin('GET', `/v1/admin/reports/${MISSING}`)).statusCode).toBe(404);
    expect((await asAdmin('GET', '/v1/admin/reports/nope')).statusCode).toBe(400);
  });
});

describe('resolving a report', () => {
  it('dismisses with a note, audited; resolving again is a 409', async () => {
    const post = await publish(t, author);
    const r = await report(reporter, 'POST', post.id);
    const response = await asAdmin('POST', `/v1/admin/reports/${r.id}/resolve`, { outcome: 'DISMISSED', note: 'not spam' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ status: 'DISMISSED', resolvedBy: admin.user.id, resolutionNote: 'not spam', resolvedAt: expect.any(String) });
    expect(await auditOf('report.resolve', r.id)).toMatchObject([
      { actor: { userId: admin.user.id }, before: { status: 'OPEN' }, after: { status: 'DISMISSED' }, reason: 'not spam' },
    ]);
    expect((await asAdmin('POST', `/v1/admin/reports/${r.id}/resolve`, { outcome: 'ACTIONED', note: 'changed my mind' })).statusCode).toBe(409);
    // The post is still listed.
    expect((await t.app.inject({ method: 'GET', url: `/v1/community/posts/${post.id}` })).statusCode).toBe(200);
  });

  it('400 for a bad outcome or missing note, 404 for an unknown report; nothing changes', async () => {
    const post = await publish(t, author);
    const r = await report(reporter, 'POST', post.id);
    for (const body of [
      { outcome: 'BANNED', note: 'x' },
      { outcome: 'DISMISSED' },
      { outcome: 'DISMISSED', note: ' ' },
      { outcome: 'DISMISSED', note: 'x', extra: 1 },
    ]) {
      expect((await asAdmin('POST', `/v1/admin/reports/${r.id}/resolve`, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await asAdmin('POST', `/v1/admin/reports/${MISSING}/resolve`, { outcome: 'DISMISSED', note: 'x' })).statusCode).toBe(404);
    expect(json(await asAdmin('GET', `/v1/admin/reports/${r.id}`)).status).toBe('OPEN');
  });
});

describe('hiding reported content', () => {
  it('hides a post from feeds, its page and the author list, and closes every open report on it', async () => {
    const post = await publish(t, author);
    const r1 = await report(reporter, 'POST', post.id);
    const r2 = await report(second, 'POST', post.id, 'offensive');
    const recent = async () => json(await t.app.inject({ method: 'GET', url: '/v1/community/feed/recent?limit=50' })).items.map((p: { id: string }) => p.id);
    expect(await recent()).toContain(post.id);

    const response = await asAdmin('POST', `/v1/admin/reports/${r1.id}/hide-content`, { note: 'breaks the rules' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ hidden: true, reportsClosed: 2, report: { status: 'ACTIONED', resolutionNote: 'breaks the rules' } });
    expect(await recent()).not.toContain(post.id);
    expect((await t.app.inject({ method: 'GET', url: `/v1/community/posts/${post.id}` })).statusCode).toBe(404);
    expect(json(await t.app.inject({ method: 'GET', url: `/v1/community/users/${author.handle}/posts` })).items.map((p: { id: string }) => p.id)).not.toContain(
      post.id,
    );
    expect(json(await asAdmin('GET', `/v1/admin/reports/${r2.id}`)).status).toBe('ACTIONED');
    expect(await auditOf('community.post.hide', post.id)).toMatchObject([{ after: { hidden: true, reportId: r1.id }, reason: 'breaks the rules' }]);

    // Hiding it again changes nothing and closes nothing.
    const again = await asAdmin('POST', `/v1/admin/reports/${r1.id}/hide-content`, { note: 'again' });
    expect(json(again)).toMatchObject({ hidden: false, reportsClosed: 0 });
  });

  it('hides a comment with its replies and keeps the comment count right', async () => {
    const post = await publish(t, author);
    const comment = json(
      await t.app.inject({ method: 'POST', url: `/v1/community/posts/${post.id}/comments`, headers: second.headers, payload: { body: 'rude' } }),
    );
    await t.app.inject({
      method: 'POST',
      url: `/v1/community/posts/${post.id}/comments`,
      headers: author.headers,
      payload: { body: 'reply', parentId: comment.id },
    });
    await t.app.inject({ method: 'POST', url: `/v1/community/posts/${post.id}/comments`, headers: author.headers, payload: { body: 'fine' } });
    const r = await report(reporter, 'COMMENT', comment.id);

    const response = await asAdmin('POST', `/v1/admin/reports/${r.id}/hide-content`, { note: 'abuse' });
    expect(json(response)).toMatchObject({ hidden: true, reportsClosed: 1 });
    const listed = json(await t.app.inject({ method: 'GET', url: `/v1/community/posts/${post.id}/comments` })).items;
    expect(listed.map((c: { body: string }) => c.body)).toEqual(['fine']);
    expect(json(await t.app.inject({ method: 'GET', url: `/v1/community/posts/${post.id}` })).commentCount).toBe(1);
    expect(await auditOf('community.comment.hide', comment.id)).toMatchObject([{ after: { items: 2 } }]);
    // A hidden comment can be neither reported nor answered.
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: '/v1/community/reports',
          headers: author.headers,
          payload: { targetType: 'COMMENT', targetId: comment.id, reason: 'x' },
        })
      ).statusCode,
    ).toBe(404);
  });

  it('a reported user is not content: 400 naming the suspend route; unknown reports 404; a note is required', async () => {
    const r = await report(reporter, 'USER', second.id);
    const refused = await asAdmin('POST', `/v1/admin/reports/${r.id}/hide-content`, { note: 'x' });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toContain(`/v1/admin/users/${second.id}/suspend`);
    expect(json(await asAdmin('GET', `/v1/admin/reports/${r.id}`)).status).toBe('OPEN');
    expect((await asAdmin('POST', `/v1/admin/reports/${MISSING}/hide-content`, { note: 'x' })).statusCode).toBe(404);
    expect((await asAdmin('POST', `/v1/admin/reports/${r.id}/hide-content`, {})).statusCode).toBe(400);
  });
});
