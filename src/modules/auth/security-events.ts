import { securityEvents } from '../../db/schema/auth.js';
import type { DbOrTx } from '../../platform/db/database.js';
import type { ClientInfo } from '../../platform/http/client-info.js';

export type SecurityEventKind = (typeof securityEvents.$inferInsert)['kind'];
export type SecurityEventRow = typeof securityEvents.$inferSelect;

export interface SecurityEventInput {
  userId: string;
  kind: SecurityEventKind;
  client?: ClientInfo;
  metadata?: Record<string, unknown>;
  at: Date;
}

export async function recordSecurityEvent(db: DbOrTx, event: SecurityEventInput): Promise<void> {
  await db.insert(securityEvents).values({
    userId: event.userId,
    kind: event.kind,
    ipAddress: event.client?.ip ?? null,
    userAgent: event.client?.userAgent ?? null,
    metadata: event.metadata ?? {},
    createdAt: event.at,
  });
}

/** A security event as the account's history, its data export and the admin view show it. */
export const toSecurityEvent = (e: SecurityEventRow) => ({
  id: e.id,
  kind: e.kind,
  ipAddress: e.ipAddress,
  userAgent: e.userAgent,
  metadata: e.metadata,
  createdAt: e.createdAt.toISOString(),
});
