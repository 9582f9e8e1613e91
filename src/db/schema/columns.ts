import { timestamp, uuid } from 'drizzle-orm/pg-core';
import { v7 as uuidv7 } from 'uuid';

/** UUIDv7 primary key generated in the app (time-ordered, so it doubles as a keyset sort key). */
export const idColumn = () =>
  uuid('id')
    .primaryKey()
    .$defaultFn(() => uuidv7());
export const tz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
export const createdAt = () => tz('created_at').notNull().defaultNow();
