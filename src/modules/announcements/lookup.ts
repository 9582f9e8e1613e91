import { eq } from 'drizzle-orm';
import { announcements } from '../../db/schema/announcements.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import type { AnnouncementRow } from './types.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One announcement by id (locked for update when asked); 404 when there is none. */
export async function findAnnouncement(tx: DbOrTx, id: string, lock = false): Promise<AnnouncementRow> {
  const rows = UUID.test(id)
    ? await (lock
        ? tx.select().from(announcements).where(eq(announcements.id, id)).for('update')
        : tx.select().from(announcements).where(eq(announcements.id, id)))
    : [];
  if (!rows[0]) throw notFound('There is no announcement with this id.');
  return rows[0];
}
