/** The notifications module's public entry beyond its service: the preference shapes the account settings routes serve. */
export { createNotificationsService, type NotificationsService } from './service.js';
export { NotificationPrefs, NotificationPrefsPatch } from './schemas.js';
