import { and, count, desc, eq, gte, inArray, isNull, min, sql, sum, type AnyColumn, type SQL } from 'drizzle-orm';
import { communityComments, communityFollows, communityPostDaily, communityPostLikes, communityPosts } from '../../db/schema/community.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { forbidden, notFound } from '../../platform/http/errors.js';
import { UUID, type CommunityDeps } from './deps.js';
import { utcDay } from './posts.js';

/** Daily view and share history is recorded from this day on (the day the community module shipped). */
export const VIEW_HISTORY_SINCE = '2026-11-25';
const NOTE = `Daily view history starts on ${VIEW_HISTORY_SINCE}: earlier days report 0 views, while the totals count every view since publication.`;

export interface DailyPoint {
  date: string;
  views: number;
  likes: number;
  comments: number;
  shares: number;
}

const inPosts = (column: typeof communityPostDaily.postId | typeof communityPostLikes.postId | typeof communityComments.postId, ids: string[] | SQL) =>
  Array.isArray(ids) ? inArray(column, ids) : sql`${column} in ${ids}`;

export function createAnalytics(deps: CommunityDeps) {
  const { db, clock } = deps;

  /** The daily series of these posts (ids, or a subquery of ids) over the last `days` days (UTC), from `firstDay` at the earliest. */
  async function series(postIds: string[] | SQL, days: number, firstDay: string): Promise<DailyPoint[]> {
    const today = utcDay(clock.now());
    const start = [utcDay(new Date(Date.parse(today) - (days - 1) * DAY_MS)), firstDay].sort().at(-1)!;
    const points = new Map<string, DailyPoint>();
    for (let t = Date.parse(start); t <= Date.parse(today); t += DAY_MS) {
      const date = utcDay(new Date(t));
      points.set(date, { date, views: 0, likes: 0, comments: 0, shares: 0 });
    }
    if (Array.isArray(postIds) && postIds.length === 0) return [...points.values()];
    const since = new Date(Date.parse(start));
    const dayOf = (column: typeof communityPostLikes.createdAt | typeof communityComments.createdAt) =>
      sql<string>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD')`;
    const [daily, likes, comments] = await Promise.all([
      db
        .select({ day: communityPostDaily.day, views: sum(communityPostDaily.views).mapWith(Number), shares: sum(communityPostDaily.shares).mapWith(Number) })
        .from(communityPostDaily)
        .where(and(inPosts(communityPostDaily.postId, postIds), gte(communityPostDaily.day, start)))
        .groupBy(communityPostDaily.day),
      db
        .select({ day: dayOf(communityPostLikes.createdAt), n: count() })
        .from(communityPostLikes)
        .where(and(inPosts(communityPostLikes.postId, postIds), gte(communityPostLikes.createdAt, since)))
        .groupBy(sql`1`),
      db
        .select({ day: dayOf(communityComments.createdAt), n: count() })
        .from(communityComments)
        .where(and(inPosts(communityComments.postId, postIds), isNull(communityComments.deletedAt), gte(communityComments.createdAt, since)))
        .groupBy(sql`1`),
    ]);
    for (const d of daily) Object.assign(points.get(d.day) ?? {}, { views: d.views, shares: d.shares });
    for (const l of likes) Object.assign(points.get(l.day) ?? {}, { likes: l.n });
    for (const c of comments) Object.assign(points.get(c.day) ?? {}, { comments: c.n });
    return [...points.values()];
  }

  const isOperator = async (userId: string) => {
    const role = (await deps.users.findActiveById(userId))?.role;
    return role === 'ADMIN' || role === 'SUPER_ADMIN';
  };

  const totalsOf = (p: typeof communityPosts.$inferSelect) => ({
    views: p.viewCount,
    likes: p.likeCount,
    comments: p.commentCount,
    shares: p.shareCount,
    remixes: p.remixCount,
  });

  return {
    /**
     * One post's totals and daily series; its author or an operator only (403 for others). The viewer's role is read
     * from the account, not from the access token, so a demoted operator loses access at once.
     */
    async post(postId: string, viewerId: string, days: number) {
      const [post] = UUID.test(postId)
        ? await db
            .select()
            .from(communityPosts)
            .where(and(eq(communityPosts.id, postId), isNull(communityPosts.deletedAt)))
        : [];
      if (!post) throw notFound('No such post. It may have been deleted.');
      if (post.authorId !== viewerId && !(await isOperator(viewerId))) throw forbidden('Only the author of this post can see its analytics.');
      return {
        postId: post.id,
        totals: totalsOf(post),
        daily: await series([post.id], days, utcDay(post.publishedAt)),
        viewHistorySince: VIEW_HISTORY_SINCE,
        note: NOTE,
      };
    },

    /** The creator dashboard: totals over all of the caller's posts, followers, the daily series and the top posts by views. */
    async dashboard(userId: string, days: number) {
      const mine = and(eq(communityPosts.authorId, userId), isNull(communityPosts.deletedAt));
      const asNumber = (column: AnyColumn) => sum(column).mapWith(Number);
      const [[agg], top, [followers]] = await Promise.all([
        db
          .select({
            posts: count(),
            views: asNumber(communityPosts.viewCount),
            likes: asNumber(communityPosts.likeCount),
            comments: asNumber(communityPosts.commentCount),
            shares: asNumber(communityPosts.shareCount),
            remixes: asNumber(communityPosts.remixCount),
            first: min(communityPosts.publishedAt),
          })
          .from(communityPosts)
          .where(mine),
        db.select().from(communityPosts).where(mine).orderBy(desc(communityPosts.viewCount), desc(communityPosts.id)).limit(5),
        db.select({ n: count() }).from(communityFollows).where(eq(communityFollows.followeeId, userId)),
      ]);
      const { first, ...sums } = agg!;
      const ids = db.select({ id: communityPosts.id }).from(communityPosts).where(mine);
      return {
        totals: {
          ...sums,
          views: sums.views ?? 0,
          likes: sums.likes ?? 0,
          comments: sums.comments ?? 0,
          shares: sums.shares ?? 0,
          remixes: sums.remixes ?? 0,
          followers: followers!.n,
        },
        daily: await series(sql`(${ids})`, days, utcDay(first ?? clock.now())),
        topPosts: top.map((p) => ({ id: p.id, caption: p.caption, publishedAt: p.publishedAt.toISOString(), ...totalsOf(p) })),
        viewHistorySince: VIEW_HISTORY_SINCE,
        note: NOTE,
      };
    },
  };
}
