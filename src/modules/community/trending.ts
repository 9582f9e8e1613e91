import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { communityPostScores, communityPosts, communityTrendingState } from '../../db/schema/community.js';
import { metricsOrPrivate } from '../../platform/metrics/metrics.js';
import type { CommunityDeps } from './deps.js';
import { currentEpoch } from './views.js';

/**
 * The trending score of spec A "Community posts and social graph": (likes*3 + comments*4 + shares*6 + remixes*8 +
 * views*0.5) / hours^1.5, where hours is the age of the post, floored at one minute so a post published a moment ago
 * does not divide by zero.
 */
export const TRENDING_MIN_HOURS = 1 / 60;
const engagementSql = sql`(
  ${communityPosts.likeCount} * 3 + ${communityPosts.commentCount} * 4 + ${communityPosts.shareCount} * 6
  + ${communityPosts.remixCount} * 8 + ${communityPosts.viewCount} * 0.5
)`;
const trendingScoreSql = (now: Date) =>
  sql`${engagementSql} / power(greatest(extract(epoch from (${now.toISOString()}::timestamptz - ${communityPosts.publishedAt})) / 3600.0, ${TRENDING_MIN_HOURS}), 1.5)`;

/** The rows an UPDATE wrote, as node-postgres (`rowCount`) or PGlite (`affectedRows`) reports it. */
const rowsWritten = (result: unknown): number => {
  const { rowCount, affectedRows } = result as { rowCount?: number | null; affectedRows?: number };
  return rowCount ?? affectedRows ?? 0;
};

/** Posts scored per transaction: each chunk commits by itself, so no lock is held for the whole recompute. */
export const TRENDING_CHUNK_ROWS = 5_000;

/**
 * Recomputes every listed post's score into the next epoch's column, a chunk of posts per short transaction, then makes
 * that epoch current. Readers keep reading the current epoch's column, which nobody writes, so they wait for nothing;
 * they see the new scores all at once when the epoch moves. Each chunk checks (sharing the state row's lock) that the
 * epoch has not moved since the recompute began, and the epoch moves only if it has not: of two recomputes that overlap
 * (two instances), the first to finish moves it and the other stops writing, so a current column is never written.
 * Runs every 15 minutes (`community.trending`); its duration is the `storefront_community_trending_recompute_seconds`
 * histogram.
 */
export function createTrendingRecompute(deps: Pick<CommunityDeps, 'db' | 'clock' | 'metrics'>, epochCache: { moved(): Promise<void> }) {
  const { db, clock } = deps;
  const metrics = metricsOrPrivate(deps.metrics);
  const duration = metrics.histogram({
    name: 'storefront_community_trending_recompute_seconds',
    help: 'How long a recompute of the trending scores took (every post, in chunks of short transactions), by outcome',
    labelNames: ['outcome'],
    buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600],
  });
  const scored = metrics.gauge({ name: 'storefront_community_trending_posts_scored', help: 'Score rows the last finished recompute wrote' });

  /** Where a chunk ends: the position of its oldest post in the recent index (newest first). */
  interface Position {
    publishedAt: string;
    id: string;
  }
  const before = (p: Position) => sql`(${communityPosts.publishedAt}, ${communityPosts.id}) < (${p.publishedAt}::timestamptz, ${p.id}::uuid)`;
  const atOrAfter = (p: Position) => sql`(${communityPosts.publishedAt}, ${communityPosts.id}) >= (${p.publishedAt}::timestamptz, ${p.id}::uuid)`;
  const LISTED = and(isNull(communityPosts.deletedAt), isNull(communityPosts.hiddenAt));

  /**
   * Scores the listed posts after `after`, newest first, `chunkRows` of them, into `column`; the chunk's last position,
   * or null at the end. Chunks follow the recent index: posts (and their score rows) are written in publishing order,
   * so a chunk reads neighbouring pages instead of one random page per post.
   */
  async function scoreChunk(
    epoch: number,
    column: string,
    after: Position | null,
    now: Date,
    chunkRows: number,
  ): Promise<{ last: Position | null; written: number } | 'moved'> {
    return db.transaction(async (tx) => {
      const [state] = await tx
        .select({ epoch: communityTrendingState.epoch })
        .from(communityTrendingState)
        .where(eq(communityTrendingState.id, 1))
        .for('share');
      if ((state?.epoch ?? 0) !== epoch) return 'moved';
      const [bound] = await tx
        .select({ publishedAt: sql<string>`${communityPosts.publishedAt}::text`, id: communityPosts.id })
        .from(communityPosts)
        .where(and(LISTED, after ? before(after) : undefined))
        .orderBy(desc(communityPosts.publishedAt), desc(communityPosts.id))
        .offset(chunkRows - 1)
        .limit(1);
      // A chunk is a few thousand posts: each finds its score row by key. Left to itself the planner hashes the whole
      // score table for every chunk (a million rows read 200 times), as it cannot tell a chunk from a tenth of the posts.
      await tx.execute(sql`set local enable_hashjoin = off`);
      await tx.execute(sql`set local enable_mergejoin = off`);
      // A post without any engagement scores 0: its row is written only when the column still holds a score to clear.
      const written = await tx.execute(sql`
        update ${communityPostScores} set ${sql.identifier(column)} = ${trendingScoreSql(now)}
        from ${communityPosts}
        where ${communityPosts.id} = ${communityPostScores.postId} and ${and(LISTED, after ? before(after) : undefined, bound ? atOrAfter(bound) : undefined)}
          and (${engagementSql} > 0 or ${communityPostScores}.${sql.identifier(column)} <> 0)`);
      return { last: bound ?? null, written: rowsWritten(written) };
    });
  }

  /** `chunkRows`: posts a transaction scores; `onChunk`: called after each chunk commits, with the rows written so far. */
  return async function recomputeTrending(
    options: { chunkRows?: number; onChunk?: (written: number) => Promise<void> } = {},
  ): Promise<{ epoch: number; moved: boolean }> {
    const chunkRows = options.chunkRows ?? TRENDING_CHUNK_ROWS;
    const started = performance.now();
    const now = clock.now();
    await db.insert(communityTrendingState).values({ id: 1, epoch: 0, computedAt: now }).onConflictDoNothing();
    const epoch = await currentEpoch(db);
    const next = epoch + 1;
    const column = next % 2 === 0 ? 'score_even' : 'score_odd';
    let after: Position | null = null;
    let written = 0;
    for (;;) {
      const chunk = await scoreChunk(epoch, column, after, now, chunkRows);
      if (chunk === 'moved') {
        duration.observe({ outcome: 'overtaken' }, (performance.now() - started) / 1000);
        return { epoch: await currentEpoch(db), moved: false };
      }
      written += chunk.written;
      await options.onChunk?.(written);
      if (!chunk.last) break;
      after = chunk.last;
    }
    const moved = await db
      .update(communityTrendingState)
      .set({ epoch: next, computedAt: now })
      .where(and(eq(communityTrendingState.id, 1), eq(communityTrendingState.epoch, epoch)))
      .returning({ epoch: communityTrendingState.epoch });
    duration.observe({ outcome: moved.length > 0 ? 'done' : 'overtaken' }, (performance.now() - started) / 1000);
    if (moved.length === 0) return { epoch: await currentEpoch(db), moved: false };
    await epochCache.moved();
    scored.set(written);
    return { epoch: next, moved: true };
  };
}
