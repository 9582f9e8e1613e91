import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { activeAccountHook } from '../../platform/auth/active-account.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { clientInfo } from '../../platform/http/client-info.js';
import type { TwoFactor } from '../auth/index.js';
import { CodeBody, PasswordBody, RecoveryCodes, TwoFactorSetup, TwoFactorStatus } from './schemas.js';

/** `/v1/account/2fa/*`: the authenticator-app second factor of the signed-in user. */
export const twoFactorRoutes: FastifyPluginAsyncTypebox<{ twoFactor: TwoFactor; ensureActive: (userId: string) => Promise<unknown> }> = async (
  app,
  { twoFactor, ensureActive },
) => {
  app.addHook('preHandler', activeAccountHook(ensureActive));
  const tags = ['two-factor'];
  const config = { auth: 'required' as const };

  app.post(
    '/v1/account/2fa/setup',
    {
      config,
      schema: {
        tags,
        summary: 'Start setup: a new secret and the otpauth:// URL for an authenticator app',
        description: 'Two-factor stays off until POST /v1/account/2fa/enable receives a valid code.',
        response: { 200: TwoFactorSetup, ...errorResponses(401, 409) },
      },
    },
    async (request) => twoFactor.setup(principalOf(request).userId),
  );

  app.post(
    '/v1/account/2fa/enable',
    {
      config,
      schema: {
        tags,
        summary: 'Turn two-factor on with a code; returns the recovery codes once',
        body: CodeBody,
        response: { 200: RecoveryCodes, ...errorResponses(400, 401, 409) },
      },
    },
    async (request) => twoFactor.enable(principalOf(request).userId, request.body.code, clientInfo(request)),
  );

  app.post(
    '/v1/account/2fa/disable',
    {
      config,
      schema: { tags, summary: 'Turn two-factor off (needs the password)', body: PasswordBody, response: { 200: Ok, ...errorResponses(400, 401, 409) } },
    },
    async (request) => twoFactor.disable(principalOf(request).userId, request.body.password, clientInfo(request)),
  );

  app.get(
    '/v1/account/2fa/status',
    {
      config,
      schema: {
        tags,
        summary: 'Whether two-factor is on, since when, and how many recovery codes are left',
        response: { 200: TwoFactorStatus, ...errorResponses(401) },
      },
    },
    async (request) => twoFactor.status(principalOf(request).userId),
  );

  app.post(
    '/v1/account/2fa/recovery-codes/regenerate',
    {
      config,
      schema: {
        tags,
        summary: 'Replace the recovery codes; the new set is shown once',
        body: CodeBody,
        response: { 200: RecoveryCodes, ...errorResponses(400, 401, 409) },
      },
    },
    async (request) => twoFactor.regenerateRecoveryCodes(principalOf(request).userId, request.body.code, clientInfo(request)),
  );
};
