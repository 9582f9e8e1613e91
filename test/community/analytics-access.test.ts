import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, publish } from '../helpers/community.js';
import { bearer, createTestApp, json, setRoleDirectly, signUpAs, type TestApp } from '../helpers/test-app.js';

/** Post analytics are the author's, or an operator's: the operator role is the account's now, not the token's. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const analytics = (postId: string, token: string) => t.app.inject({ method: 'GET', url: `/v1/community/posts/${postId}/analytics`, headers: bearer(token) });

describe("another user's post analytics", () => {
  it('an operator demoted to USER cannot read them with an access token that still says ADMIN', async () => {
    const author = await member(t, 'Author');
    const post = await publish(t, author);
    const operator = await signUpAs(t, 'ADMIN');
    expect(json(await analytics(post.id, operator.accessToken))).toMatchObject({ postId: post.id });

    await setRoleDirectly(t, operator.user.id, 'USER');
    const claims = JSON.parse(Buffer.from(operator.accessToken.split('.')[1], 'base64url').toString());
    expect(claims.role).toBe('ADMIN');
    const refused = await analytics(post.id, operator.accessToken);
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error).toMatchObject({ code: 'FORBIDDEN', message: 'Only the author of this post can see its analytics.' });
    // The author still reads their own.
    expect((await analytics(post.id, author.accessToken)).statusCode).toBe(200);
  });

  it('a user promoted to ADMIN reads them before signing in again', async () => {
    const author = await member(t, 'Author');
    const post = await publish(t, author);
    const promoted = await member(t, 'Promoted');
    expect((await analytics(post.id, promoted.accessToken)).statusCode).toBe(403);
    await setRoleDirectly(t, promoted.id, 'ADMIN');
    expect(json(await analytics(post.id, promoted.accessToken))).toMatchObject({ postId: post.id });
  });
});
