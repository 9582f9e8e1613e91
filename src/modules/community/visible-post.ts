import { runBound } from '../../platform/db/bound.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import { maySee } from './audience.js';
import { UUID, type CommunityDeps } from './deps.js';
import { listedPostStatement, toPostRow, type PostRow } from './post-statements.js';

export const noSuchPost = () => notFound('No such post. It may have been deleted.');

/**
 * A listed post the viewer may see (not deleted, not hidden, its author's audience includes the viewer, no block
 * either way), or 404: a post the viewer may not see answers exactly like a deleted one. Inside `tx` when given (a
 * write's transaction), read from it.
 */
export function createVisiblePost(deps: Pick<CommunityDeps, 'db' | 'blocks'>) {
  const { db, blocks } = deps;

  /**
   * Whether either user BLOCKed the other. Outside a transaction the viewer's hidden authors (kept by each instance; a
   * superset of the blocks either way) answer "no" for almost every author without a read.
   */
  async function blockedBetween(viewerId: string, authorId: string, tx?: DbOrTx): Promise<boolean> {
    if (!tx && !(await blocks.hiddenUserIds(viewerId)).includes(authorId)) return false;
    return blocks.blockedEitherWay(tx ?? db, viewerId, authorId);
  }

  return async function visiblePost(postId: string, viewerId: string | null, tx?: DbOrTx): Promise<PostRow> {
    if (!UUID.test(postId)) throw noSuchPost();
    const [raw] = (await runBound(tx ?? db, listedPostStatement.bind({ id: postId }))).rows;
    if (!raw) throw noSuchPost();
    const row = toPostRow(raw);
    if (!(await maySee(tx ?? db, viewerId, { id: row.authorId, visibility: row.authorVisibility }))) throw noSuchPost();
    if (viewerId && viewerId !== row.authorId && (await blockedBetween(viewerId, row.authorId, tx))) throw noSuchPost();
    return row;
  };
}
