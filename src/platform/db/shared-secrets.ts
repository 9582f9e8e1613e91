import { randomBytes } from 'node:crypto';
import type { Database } from './database.js';

/**
 * A secret generated once for all instances on one database (scaled mode without JWT_SECRET): the first instance's
 * insert wins and every instance reads the winner, so tokens minted by one instance verify on the others.
 */
export async function sharedSecret(database: Database, name: string): Promise<string> {
  await database.query('insert into platform_secrets (name, value) values ($1, $2) on conflict (name) do nothing', [
    name,
    randomBytes(48).toString('base64url'),
  ]);
  // A separate statement: its snapshot sees a row another instance committed while the insert waited on it.
  const { rows } = await database.query<{ value: string }>('select value from platform_secrets where name = $1', [name]);
  return rows[0]!.value;
}
