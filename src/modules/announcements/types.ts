import type { announcements, ANNOUNCEMENT_AUDIENCES, ANNOUNCEMENT_LEVELS } from '../../db/schema/announcements.js';

export type AnnouncementRow = typeof announcements.$inferSelect;
export type AnnouncementLevel = (typeof ANNOUNCEMENT_LEVELS)[number];
export type AnnouncementAudience = (typeof ANNOUNCEMENT_AUDIENCES)[number];
