import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

const Role = Type.Enum(['OWNER', 'ADMIN', 'MEMBER']);
const Name = Type.String({ minLength: 1, maxLength: 80, pattern: '\\S', description: '1-80 characters' });
const Slug = Type.String({
  minLength: 3,
  maxLength: 48,
  pattern: '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$',
  description: '3-48 lowercase letters, digits and inner hyphens',
});

export const Workspace = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  role: Role,
  memberCount: Type.Integer(),
  createdAt: DateTime,
});
export const WorkspaceList = Type.Object({ items: Type.Array(Workspace) });

export const CreateWorkspaceBody = StrictObject({ name: Name, slug: Type.Optional(Slug) });
export const UpdateWorkspaceBody = StrictObject({ name: Type.Optional(Name), slug: Type.Optional(Slug) }, { minProperties: 1 });

export const WorkspaceIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });
export const MemberParams = StrictObject({ id: Type.String({ format: 'uuid' }), memberId: Type.String({ format: 'uuid' }) });
export const InvitationParams = StrictObject({ id: Type.String({ format: 'uuid' }), inviteId: Type.String({ format: 'uuid' }) });

export const Member = Type.Object({
  id: Type.String({ description: 'The member id (the user id) used in the member routes' }),
  userId: Type.String(),
  email: Nullable(Type.String()),
  name: Nullable(Type.String()),
  handle: Nullable(Type.String()),
  role: Role,
  joinedAt: DateTime,
});
export const MemberList = Type.Object({ items: Type.Array(Member) });
export const SetRoleBody = StrictObject({ role: Role });

export const Invitation = Type.Object({
  id: Type.String(),
  workspaceId: Type.String(),
  email: Type.String(),
  role: Type.Enum(['ADMIN', 'MEMBER']),
  status: Type.Enum(['PENDING', 'ACCEPTED', 'DECLINED', 'REVOKED', 'EXPIRED']),
  expiresAt: DateTime,
  createdAt: DateTime,
});
export const InvitationList = Type.Object({ items: Type.Array(Invitation) });
export const CreateInvitationBody = StrictObject({
  email: Type.String({ format: 'email', maxLength: 254 }),
  role: Type.Optional(Type.Enum(['ADMIN', 'MEMBER'], { default: 'MEMBER' })),
});
export const InvitationCreated = Type.Object({
  token: Type.String({ description: 'The single-use wsi_ token to send to the invitee; shown only this once' }),
  invitation: Invitation,
});
export const InvitationTokenBody = StrictObject({ token: Type.String({ minLength: 1, maxLength: 200 }) });
