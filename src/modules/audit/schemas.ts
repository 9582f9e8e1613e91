import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject } from '../../platform/http/schemas.js';

export const AuditQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: '1-100, default 50' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The nextCursor of the previous page' })),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'e.g. model.update' })),
  targetType: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'e.g. model, user, plan' })),
  targetId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  actorId: Type.Optional(Type.String({ format: 'uuid', description: 'The operator who made the change' })),
});

const AnyJson = Type.Unknown({ description: 'The changed object (or its changed fields) as JSON, null when there is none' });

export const AuditEntry = Type.Object({
  id: Type.String(),
  actor: Type.Object({ userId: Nullable(Type.String({ description: 'null for the admin CLI' })), role: Nullable(Type.String()) }),
  action: Type.String(),
  targetType: Type.String(),
  targetId: Nullable(Type.String()),
  before: AnyJson,
  after: AnyJson,
  reason: Nullable(Type.String()),
  requestId: Nullable(Type.String()),
  createdAt: DateTime,
});

export const AuditPage = Page(AuditEntry);
