import { and, eq, inArray, sql, type AnyColumn, type SQL } from 'drizzle-orm';
import { communityFollows, type AuthorVisibility } from '../../db/schema/community.js';
import type { DbOrTx } from '../../platform/db/database.js';

/**
 * Who sees an author's posts and works, by the author's `profileVisibility` (copied on each post and work as
 * `author_visibility`): PUBLIC everyone; FOLLOWERS_ONLY the author and their followers; PRIVATE the author alone.
 * To anyone else a single post or work is a 404 like a deleted one, and lists leave it out.
 */
export interface Author {
  id: string;
  visibility: AuthorVisibility;
}

/**
 * The listing row filter: rows whose author (`authorColumn`, with their copy of the visibility in `visibilityColumn`)
 * `viewerId` may see. A row filter only: the partial indexes' predicates do not name the visibility, so a feed walks the
 * same index and skips the rows it may not show; a FOLLOWERS_ONLY row costs one probe of the follows' primary key.
 */
export function visibleTo(viewerId: string | null, visibilityColumn: AnyColumn, authorColumn: AnyColumn): SQL {
  if (!viewerId) return sql`${visibilityColumn} = 'PUBLIC'`;
  const follows = sql`select 1 from ${communityFollows} where ${communityFollows.followerId} = ${viewerId} and ${communityFollows.followeeId} = ${authorColumn}`;
  return sql`(${visibilityColumn} = 'PUBLIC' or ${authorColumn} = ${viewerId} or (${visibilityColumn} = 'FOLLOWERS_ONLY' and exists (${follows})))`;
}

/** The ids of the authors among `authors` that `viewerId` may see (one query, only when a FOLLOWERS_ONLY author needs it). */
export async function authorsSeenBy(tx: DbOrTx, viewerId: string | null, authors: readonly Author[]): Promise<Set<string>> {
  const seen = new Set(authors.filter((a) => a.visibility === 'PUBLIC' || a.id === viewerId).map((a) => a.id));
  const followersOnly = [...new Set(authors.filter((a) => a.visibility === 'FOLLOWERS_ONLY' && a.id !== viewerId).map((a) => a.id))];
  if (viewerId && followersOnly.length > 0) {
    const followed = await tx
      .select({ id: communityFollows.followeeId })
      .from(communityFollows)
      .where(and(eq(communityFollows.followerId, viewerId), inArray(communityFollows.followeeId, followersOnly)));
    for (const f of followed) seen.add(f.id);
  }
  return seen;
}

/** Whether `viewerId` may see this author's posts and works. */
export const maySee = async (tx: DbOrTx, viewerId: string | null, author: Author): Promise<boolean> =>
  (await authorsSeenBy(tx, viewerId, [author])).has(author.id);
