import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscriptions } from '../src/db/schema/subscriptions.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { verifyEmail } from './helpers/email-verification.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const call = (token: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
const generate = (token: string) => call(token, 'POST', '/v1/ai/text', { model: 'local/text', messages: [{ role: 'user', content: 'Write one line' }] });

describe('a workspace subscription meters its members against the workspace wallet', () => {
  it("charges the workspace wallet for a member's call, and the member's own wallet again once they leave", async () => {
    const owner = await signUp(t.app);
    const member = await signUp(t.app);
    await verifyEmail(t, member);
    const workspace = json(await call(owner.accessToken, 'POST', '/v1/workspaces', { name: 'Metered' }));
    const { token } = json(await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: member.email }));
    expect((await call(member.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token })).statusCode).toBe(200);

    // The operator action (no API in the spec): the owner's subscription is assigned to the workspace, whose wallet is funded.
    const [subscription] = await t.platform.db
      .update(subscriptions)
      .set({ workspaceId: workspace.id })
      .where(eq(subscriptions.userId, owner.user.id))
      .returning();
    t.services.subscriptions.forgetCached(owner.user.id);
    await t.services.wallet.credit({
      workspaceId: workspace.id,
      kind: 'ADJUSTMENT',
      amount: 5_000_000,
      idempotencyKey: `ws-fund:${workspace.id}`,
      note: 'test funding',
    });

    const memberBefore = (await t.services.wallet.balance({ userId: member.user.id })).tokens;
    const answer = await generate(member.accessToken);
    expect(answer.statusCode).toBe(200);
    const charged = json(answer).usage.creditsConsumed as number;
    expect(charged).toBeGreaterThan(0);
    expect((await t.services.wallet.balance({ workspaceId: workspace.id })).tokens).toBe(5_000_000 - charged);
    expect((await t.services.wallet.balance({ userId: member.user.id })).tokens).toBe(memberBefore);
    const [record] = await t.platform.db
      .select()
      .from(usageRecords)
      .where(and(eq(usageRecords.userId, member.user.id), eq(usageRecords.requestId, json(answer).requestId)));
    expect(record).toMatchObject({ subscriptionId: subscription!.id, tokensConsumed: charged });
    expect(json(await call(member.accessToken, 'GET', '/v1/usage')).items[0]).toMatchObject({ subscriptionId: subscription!.id, creditsConsumed: charged });

    // the owner meters there too
    const ownerCall = json(await generate(owner.accessToken));
    expect((await t.services.wallet.balance({ workspaceId: workspace.id })).tokens).toBe(5_000_000 - charged - ownerCall.usage.creditsConsumed);

    // a workspace with a subscription in effect cannot be deleted
    const refused = await call(owner.accessToken, 'DELETE', `/v1/workspaces/${workspace.id}`);
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toMatch(/active subscription/);

    // the member leaves: their next call is theirs again
    expect((await call(member.accessToken, 'DELETE', `/v1/workspaces/${workspace.id}/members/${member.user.id}`)).statusCode).toBe(200);
    const workspaceBefore = (await t.services.wallet.balance({ workspaceId: workspace.id })).tokens;
    const own = await generate(member.accessToken);
    expect(own.statusCode).toBe(200);
    expect((await t.services.wallet.balance({ workspaceId: workspace.id })).tokens).toBe(workspaceBefore);
    expect((await t.services.wallet.balance({ userId: member.user.id })).tokens).toBe(memberBefore - (json(own).usage.creditsConsumed as number));
  });
});
