import type { Tx } from '../../platform/db/database.js';

/**
 * The one place of the rule "a BLOCK removes the follows between the two users, in both directions".
 * It runs inside the transaction that creates the block. The follow table does not exist yet, so today there is
 * nothing to remove: when the social graph (community module) adds follows, this function deletes
 * (follower = a, followee = b) and (follower = b, followee = a) and returns how many rows went.
 */
export async function dropFollowsBetween(_tx: Tx, _a: string, _b: string): Promise<number> {
  return 0;
}
