import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Nullable, StrictObject, errorResponses } from '../../platform/http/schemas.js';
import { DisplayName, toMeUser, type AuthService } from '../auth/index.js';

export const MeUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Nullable(Type.String()),
  role: Type.String(),
  status: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  handle: Nullable(Type.String()),
  avatarUrl: Nullable(Type.String()),
  bio: Nullable(Type.String()),
});

export interface MeRoutesOptions {
  auth: AuthService;
  /** The caller's active subscription; null until billing provides one. */
  activeSubscription: (userId: string) => Promise<Record<string, unknown> | null>;
}

export const meRoutes: FastifyPluginAsyncTypebox<MeRoutesOptions> = async (app, { auth, activeSubscription }) => {
  const tags = ['users'];
  app.get(
    '/v1/users/me',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'The signed-in user and their active subscription',
        response: { 200: Type.Object({ user: MeUser, activeSubscription: Nullable(Type.Object({}, { additionalProperties: true })) }), ...errorResponses(401) },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      const [user, subscription] = await Promise.all([auth.getActiveUser(userId), activeSubscription(userId)]);
      return { user: toMeUser(user), activeSubscription: subscription };
    },
  );

  app.patch(
    '/v1/users/me',
    {
      config: { auth: 'required' },
      schema: { tags, summary: 'Change the display name', body: StrictObject({ name: DisplayName }), response: { 200: MeUser, ...errorResponses(400, 401) } },
    },
    async (request) => auth.updateName(principalOf(request).userId, request.body.name),
  );
};
