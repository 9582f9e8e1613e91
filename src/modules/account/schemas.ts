import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject, pageQuery } from '../../platform/http/schemas.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/index.js';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'Case-insensitive' });
const NewPassword = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH });
const Password = Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH });
const LinkToken = Type.String({ minLength: 1, maxLength: 200 });
export const SixDigitCode = Type.String({ pattern: '^[0-9]{6}$', description: 'The 6-digit code of the authenticator app' });

// ---- password and email

export const PasswordChangeBody = StrictObject({ currentPassword: Password, newPassword: NewPassword });
export const ForgotBody = StrictObject({ email: Email });
export const ForgotResult = Type.Object({ ok: Type.Literal(true), validMinutes: Type.Integer() });
export const VerifyOtpBody = StrictObject({ email: Email, otp: Type.String({ pattern: '^[0-9]{4}$', description: 'The 4-digit code from the email' }) });
export const ResetToken = Type.Object({ resetToken: Type.String() });
export const ResetBody = StrictObject({ token: LinkToken, password: NewPassword });
export const TokenBody = StrictObject({ token: LinkToken });
export const VerifySendResult = Type.Object({ ok: Type.Literal(true), alreadyVerified: Type.Boolean() });
export const VerifyConfirmResult = Type.Object({ userId: Type.String() });
export const EmailChangeBody = StrictObject({ newEmail: Email });
export const EmailChangeResult = Type.Object({ ok: Type.Literal(true), expiresAt: DateTime });
export const EmailConfirmResult = Type.Object({ ok: Type.Literal(true), userId: Type.String(), email: Type.String() });

// ---- two-factor

export const TwoFactorSetup = Type.Object({ secret: Type.String(), otpauthUrl: Type.String() });
export const CodeBody = StrictObject({ code: SixDigitCode });
export const RecoveryCodes = Type.Object({ ok: Type.Literal(true), recoveryCodes: Type.Array(Type.String()) });
export const PasswordBody = StrictObject({ password: Password });
export const TwoFactorStatus = Type.Object({ enabled: Type.Boolean(), since: Nullable(DateTime), recoveryCodesRemaining: Type.Integer() });

// ---- sessions and security events

export const Session = Type.Object({
  id: Type.String(),
  device: Type.String(),
  userAgent: Nullable(Type.String()),
  ipAddress: Nullable(Type.String()),
  location: Nullable(Type.String()),
  lastSeenAt: DateTime,
  createdAt: DateTime,
  current: Type.Boolean({ description: 'The session of the access token making this request' }),
});
export const SessionList = Type.Object({ items: Type.Array(Session) });
export const SessionParams = StrictObject({ id: Type.String({ format: 'uuid' }) });
export const RevokeOthersResult = Type.Object({ ok: Type.Literal(true), revoked: Type.Integer() });

export const SECURITY_EVENT_KINDS = [
  'LOGIN_SUCCESS',
  'LOGIN_FAILED',
  'LOGIN_LOCKED',
  'LOGOUT',
  'PASSWORD_CHANGED',
  'PASSWORD_RESET',
  'EMAIL_CHANGED',
  'TWO_FA_ENABLED',
  'TWO_FA_DISABLED',
  'TWO_FA_FAILED',
  'SESSION_REVOKED',
  'IMPERSONATED_BY_ADMIN',
] as const;
export const SecurityEvent = Type.Object({
  id: Type.String(),
  kind: Type.Enum(SECURITY_EVENT_KINDS),
  ipAddress: Nullable(Type.String()),
  userAgent: Nullable(Type.String()),
  metadata: Type.Object({}, { additionalProperties: true }),
  createdAt: DateTime,
});
export const SecurityEventsQuery = StrictObject(pageQuery(50, 200));
export const SecurityEventPage = Type.Object({ items: Type.Array(SecurityEvent), nextCursor: Nullable(Type.String()) });

// ---- profile and preferences

export const ProfileBody = StrictObject(
  {
    handle: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_]{3,30}$', description: '3-30 letters, digits or underscores' })),
    avatarUrl: Type.Optional(Nullable(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 }))),
    bio: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  },
  { minProperties: 1 },
);
export const PublicUser = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  handle: Type.String(),
  avatarUrl: Nullable(Type.String()),
  bio: Nullable(Type.String()),
  createdAt: DateTime,
});

const PreferenceFields = {
  locale: Type.String({ minLength: 2, maxLength: 10 }),
  timezone: Type.String({ minLength: 2, maxLength: 64 }),
  theme: Type.Enum(['light', 'dark', 'system']),
  profileVisibility: Type.Enum(['PUBLIC', 'FOLLOWERS_ONLY', 'PRIVATE']),
  allowDmFromAnyone: Type.Boolean(),
  defaultGenerationVisibility: Type.Enum(['PRIVATE', 'UNLISTED', 'PUBLIC']),
};
export const Preferences = Type.Object(PreferenceFields);
export const PreferencesPatch = StrictObject({
  locale: Type.Optional(PreferenceFields.locale),
  timezone: Type.Optional(PreferenceFields.timezone),
  theme: Type.Optional(PreferenceFields.theme),
  profileVisibility: Type.Optional(PreferenceFields.profileVisibility),
  allowDmFromAnyone: Type.Optional(PreferenceFields.allowDmFromAnyone),
  defaultGenerationVisibility: Type.Optional(PreferenceFields.defaultGenerationVisibility),
});

// ---- blocks

export const BlockKind = Type.Enum(['BLOCK', 'MUTE']);
export const Block = Type.Object({ handle: Type.String(), kind: BlockKind, reason: Nullable(Type.String()), createdAt: DateTime });
export const BlockBody = StrictObject({
  handle: Type.String({ minLength: 1, maxLength: 64 }),
  kind: Type.Optional(BlockKind),
  reason: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
});
export const BlockPage = Type.Object({ items: Type.Array(Block), nextCursor: Nullable(Type.String()) });
export const BlocksQuery = StrictObject(pageQuery(50, 200));
export const HandleParams = StrictObject({ handle: Type.String({ minLength: 1, maxLength: 64 }) });

// ---- data export and deletion

export const DataExport = Type.Object({
  id: Type.String(),
  status: Type.Enum(['QUEUED', 'RUNNING', 'READY', 'FAILED', 'EXPIRED']),
  createdAt: DateTime,
  startedAt: Nullable(DateTime),
  completedAt: Nullable(DateTime),
  expiresAt: Nullable(DateTime),
  sizeBytes: Nullable(Type.Integer()),
  downloadUrl: Nullable(Type.String({ description: 'A signed link, valid until expiresAt; null until the export is ready' })),
  error: Nullable(Type.String()),
});
export const DataExportList = Type.Object({ items: Type.Array(DataExport) });
export const ExportParams = StrictObject({ id: Type.String({ format: 'uuid' }) });
export const DownloadQuery = StrictObject({ token: Type.String({ minLength: 1, maxLength: 128 }) });
