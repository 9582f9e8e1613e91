import { Type } from 'typebox';
import { NOTIFICATION_TYPES } from '../../db/schema/notifications.js';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

export const Notification = Type.Object({
  id: Type.String(),
  type: Type.Enum(NOTIFICATION_TYPES),
  title: Type.String(),
  body: Nullable(Type.String()),
  payload: Type.Object({}, { additionalProperties: true }),
  readAt: Nullable(DateTime),
  createdAt: DateTime,
});

export const NotificationsQuery = StrictObject({
  ...pageQuery(30, 100),
  unreadOnly: Type.Optional(Type.Boolean({ default: false })),
});

export const NotificationsPage = Type.Object({ ...Page(Notification).properties, unreadCount: Type.Integer() });

export const NotificationIdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const ReadAllResult = Type.Object({ ok: Type.Literal(true), updated: Type.Integer() });

const Flag = Type.Boolean();
export const NotificationPrefs = Type.Object({
  emailJobUpdates: Flag,
  emailBillingAlerts: Flag,
  emailSecurityAlerts: Flag,
  emailMarketing: Flag,
  inAppCommunityActivity: Flag,
  inAppQuotaWarnings: Flag,
});

export const NotificationPrefsPatch = StrictObject(
  Object.fromEntries(Object.entries(NotificationPrefs.properties).map(([key, schema]) => [key, Type.Optional(schema)])) as {
    [K in keyof typeof NotificationPrefs.properties]: ReturnType<typeof Type.Optional<(typeof NotificationPrefs.properties)[K]>>;
  },
);
