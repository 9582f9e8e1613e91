import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

const ROLES = ['USER', 'ADMIN', 'SUPER_ADMIN'] as const;
const STATUSES = ['ACTIVE', 'SUSPENDED', 'DELETED'] as const;

const Reason = Type.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: 'Why: kept in the audit trail (1-500 characters)' });

export const UserIdParams = StrictObject({ id: Type.String({ format: 'uuid', description: 'The account id' }) });

export const UserSearchQuery = StrictObject({
  ...pageQuery(50, 100),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Substring of the email, name or handle (case-insensitive)' })),
  role: Type.Optional(Type.Enum([...ROLES])),
  status: Type.Optional(Type.Enum([...STATUSES])),
});

export const AdminUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean(),
  name: Nullable(Type.String()),
  handle: Type.String(),
  avatarUrl: Nullable(Type.String()),
  role: Type.Enum([...ROLES]),
  status: Type.Enum([...STATUSES]),
  createdAt: DateTime,
  updatedAt: DateTime,
  deletedAt: Nullable(DateTime),
});
export const AdminUserPage = Page(AdminUser);

const SecurityEventView = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  ipAddress: Nullable(Type.String()),
  userAgent: Nullable(Type.String()),
  metadata: Type.Object({}, { additionalProperties: true }),
  createdAt: DateTime,
});

export const AdminUserDetail = Type.Object({
  user: AdminUser,
  bio: Nullable(Type.String()),
  subscription: Nullable(Type.Object({}, { additionalProperties: true, description: 'The active subscription as /v1/users/me shows it, or null' })),
  wallet: Type.Object({
    tokens: Type.Integer(),
    credits: Type.Number(),
    unpaidOverrunTokens: Type.Integer(),
    totals: Type.Object({}, { additionalProperties: Type.Integer() }),
  }),
  recentSecurityEvents: Type.Array(SecurityEventView, { description: 'The 20 newest security events' }),
});

export const RoleBody = StrictObject({ role: Type.Enum([...ROLES]), reason: Type.Optional(Reason) });
export const ReasonBody = StrictObject({ reason: Reason });

export const ImpersonationToken = Type.Object({
  accessToken: Type.String({ description: 'An access token for the user, carrying `act: { sub: <your id> }`; it cannot be refreshed' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds' }),
  expiresAt: DateTime,
  sessionId: Type.String({ description: "The support session: listed in the user's sessions; revoking it ends the token" }),
  user: AdminUser,
});

export const GrantBody = StrictObject({
  tokens: Type.Integer({ minimum: 1, maximum: 1_000_000_000_000, description: "Tokens to add to the user's wallet" }),
  reason: Reason,
  idempotencyKey: Type.Optional(
    Type.String({
      minLength: 8,
      maxLength: 200,
      pattern: '^[A-Za-z0-9._:-]+$',
      description: 'Send the same key when retrying: a key grants once. Generated when omitted.',
    }),
  ),
});

export const GrantResult = Type.Object({
  applied: Type.Boolean({ description: 'false when this key had already granted: nothing changed' }),
  ledgerEntryId: Type.String(),
  tokens: Type.Integer(),
  balance: Type.Integer({ description: 'The wallet balance after the grant' }),
  idempotencyKey: Type.String(),
});
