import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { activeAccountHook } from '../../platform/auth/active-account.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { clientInfo } from '../../platform/http/client-info.js';
import { OTP_TTL_MS } from './password.js';
import {
  EmailChangeBody,
  EmailChangeResult,
  EmailConfirmResult,
  ForgotBody,
  ForgotResult,
  PasswordChangeBody,
  ResetBody,
  ResetToken,
  RevokeOthersResult,
  SecurityEventPage,
  SecurityEventsQuery,
  SessionList,
  SessionParams,
  TokenBody,
  VerifyConfirmResult,
  VerifyOtpBody,
  VerifySendResult,
} from './schemas.js';
import type { AccountService } from './service.js';

/** Password, email, sessions and security history: `/v1/account/...`. */
export const accountSecurityRoutes: FastifyPluginAsyncTypebox<{ account: AccountService; ensureActive: (userId: string) => Promise<unknown> }> = async (
  app,
  { account, ensureActive },
) => {
  app.addHook('preHandler', activeAccountHook(ensureActive));
  const tags = ['account'];
  const required = { auth: 'required' as const };

  app.post(
    '/v1/account/password/change',
    {
      config: required,
      schema: {
        tags,
        summary: 'Change the password (signs out the other devices)',
        body: PasswordChangeBody,
        response: { 200: Ok, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await account.password.change(principal.userId, principal.sessionId, request.body, clientInfo(request));
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/account/password/forgot',
    {
      schema: {
        tags,
        summary: 'Mail a 4-digit reset code (always answers ok)',
        description: 'A new code replaces the previous one; a repeat within 60 seconds is ignored.',
        body: ForgotBody,
        response: { 200: ForgotResult, ...errorResponses(400) },
      },
    },
    async (request) => {
      await account.password.forgot(request.body.email);
      return { ok: true as const, validMinutes: OTP_TTL_MS / 60_000 };
    },
  );

  app.post(
    '/v1/account/password/verify-otp',
    {
      schema: {
        tags,
        summary: 'Trade the mailed code for a 15-minute reset token',
        body: VerifyOtpBody,
        response: { 200: ResetToken, ...errorResponses(400) },
      },
    },
    async (request) => account.password.verifyOtp(request.body.email, request.body.otp),
  );

  app.post(
    '/v1/account/password/reset',
    {
      schema: {
        tags,
        summary: 'Set a new password with a reset token (signs out every device)',
        body: ResetBody,
        response: { 200: Ok, ...errorResponses(400) },
      },
    },
    async (request) => {
      await account.password.reset(request.body.token, request.body.password, clientInfo(request));
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/account/verify-email/send',
    { config: required, schema: { tags, summary: 'Mail a link that confirms the account email', response: { 200: VerifySendResult, ...errorResponses(401) } } },
    async (request) => account.email.sendVerification(principalOf(request).userId),
  );

  app.post(
    '/v1/account/verify-email/confirm',
    {
      schema: {
        tags,
        summary: 'Confirm the account email with the mailed token',
        body: TokenBody,
        response: { 200: VerifyConfirmResult, ...errorResponses(400) },
      },
    },
    async (request) => account.email.confirmVerification(request.body.token),
  );

  app.post(
    '/v1/account/email/change',
    {
      config: required,
      schema: {
        tags,
        summary: 'Mail a confirmation link (valid 24 hours) to a new address',
        body: EmailChangeBody,
        response: { 200: EmailChangeResult, ...errorResponses(400, 401, 409) },
      },
    },
    async (request) => account.email.requestChange(principalOf(request).userId, request.body.newEmail),
  );

  app.post(
    '/v1/account/email/confirm',
    {
      schema: {
        tags,
        summary: 'Switch to the new address with the mailed token',
        body: TokenBody,
        response: { 200: EmailConfirmResult, ...errorResponses(400, 409) },
      },
    },
    async (request) => account.email.confirmChange(request.body.token, clientInfo(request)),
  );

  app.get(
    '/v1/account/sessions',
    { config: required, schema: { tags, summary: 'Signed-in devices, one row per device', response: { 200: SessionList, ...errorResponses(401) } } },
    async (request) => {
      const principal = principalOf(request);
      return account.security.listSessions(principal.userId, principal.sessionId);
    },
  );

  app.delete(
    '/v1/account/sessions/:id',
    { config: required, schema: { tags, summary: 'Sign out one device', params: SessionParams, response: { 200: Ok, ...errorResponses(400, 401, 404) } } },
    async (request) => {
      await account.security.revokeSession(principalOf(request).userId, request.params.id, clientInfo(request));
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/account/sessions/revoke-others',
    { config: required, schema: { tags, summary: 'Sign out every device but this one', response: { 200: RevokeOthersResult, ...errorResponses(401) } } },
    async (request) => {
      const principal = principalOf(request);
      return account.security.revokeOthers(principal.userId, principal.sessionId, clientInfo(request));
    },
  );

  app.get(
    '/v1/account/security/events',
    {
      config: required,
      schema: {
        tags,
        summary: 'Recent security events, newest first',
        querystring: SecurityEventsQuery,
        response: { 200: SecurityEventPage, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const { limit = 50, cursor } = request.query;
      return account.security.listEvents(principalOf(request).userId, { limit, cursor });
    },
  );
};
