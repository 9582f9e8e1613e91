import { bearer, type TestApp } from './test-app.js';
import { extract, lastMailTo } from './outbox.js';

/** Verifies an account's email the way its owner does: asks for the link, reads it from the outbox, confirms it. */
export async function verifyEmail(t: Pick<TestApp, 'app' | 'platform'>, account: { accessToken: string; email: string }): Promise<void> {
  const sent = await t.app.inject({ method: 'POST', url: '/v1/account/verify-email/send', headers: bearer(account.accessToken) });
  if (sent.statusCode !== 200) throw new Error(`verify-email/send failed: ${sent.statusCode} ${sent.body}`);
  const token = decodeURIComponent(extract(await lastMailTo(t.platform.db, account.email), /\/verify-email\?token=(\S+)/));
  const confirmed = await t.app.inject({ method: 'POST', url: '/v1/account/verify-email/confirm', payload: { token } });
  if (confirmed.statusCode !== 200) throw new Error(`verify-email/confirm failed: ${confirmed.statusCode} ${confirmed.body}`);
}
