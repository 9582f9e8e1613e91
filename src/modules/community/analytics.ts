import { and, count, desc, eq, gte, inArray, isNull, sql, sum } from 'drizzle-orm';
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

export function createAnalytics(deps: CommunityDeps) {
  const { db, clock } = deps;

  /** The daily series of these posts over the last `days` days (UTC), from `firstDay` at the earliest. */
  async function series(postIds: string[], days: number, firstDay: string): Promise<DailyPoint[]> {
    const today = utcDay(clock.now());
    const start = [utcDay(new Date(Date.parse(today) - (days - 1) * DAY_MS)), firstDay].sort().at(-1)!;
    const points = new Map<string, DailyPoint>();
    for (let t = Date.parse(start); t <= Date.parse(today); t += DAY_MS) {
      const date = utcDay(new Date(t));
      points.set(date, { date, views: 0, likes: 0, comments: 0, shares: 0 });
    }
    if (postIds.length === 0) return [...points.values()];
    const since = new Date(Date.parse(start));
    const dayOf = (column: typeof communityPostLikes.createdAt | typeof communityComments.createdAt) => sql<string>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD')`;
    const [daily, likes, comments] = await Promise.all([
      db
        .select({ day: communityPostDaily.day, views: sum(communityPostDaily.views).mapWith(Number), shares: sum(communityPostDaily.shares).mapWith(Number) })
        .from(communityPostDaily)
        .where(and(inArray(communityPostDaily.postId, postIds), gte(communityPostDaily.day, start)))
        .groupBy(communityPostDaily.day),
      db
        .select({ day: dayOf(communityPostLikes.createdAt), n: count() })
        .from(communityPostLikes)
        .where(and(inArray(communityPostLikes.postId, postIds), gte(communityPostLikes.createdAt, since)))
        .groupBy(sql`1`),
      db
        .select({ day: dayOf(communityComments.createdAt), n: count() })
        .from(communityComments)
        .where(and(inArray(communityComments.postId, postIds), isNull(communityComments.deletedAt), gte(communityComments.createdAt, since)))
        .groupBy(sql`1`),
    ]);
    for (const d of daily) Object.assign(points.get(d.day) ?? {}, { views: d.views, shares: d.shares });
    for (const l of likes) Object.assign(points.get(l.day) ?? {}, { likes: l.n });
    for (const c of comments) Object.assign(points.get(c.day) ?? {}, { comments: c.n });
    return [...points.values()];
  }

  const totalsOf = (p: typeof communityPosts.$inferSelect) => ({
    views: p.viewCount,
    likes: p.likeCount,
    comments: p.commentCount,
    shares: p.shareCount,
    remixes: p.remixCount,
  });

  return {
    /** One post's totals and daily series; its author or an admin only (403 for others). */
    async post(postId: string, viewer: { userId: string; isAdmin: boolean }, days: number) {
      const [post] = UUID.test(postId) ? await db.select().from(communityPosts).where(and(eq(communityPosts.id, postId), isNull(communityPosts.deletedAt))) : [];
      if (!post) throw notFound('No such post. It may have been deleted.');
      if (post.authorId !== viewer.userId && !viewer.isAdmin) throw forbidden('Only the author of this post can see its analytics.');
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
      const posts = await db
        .select()
        .from(communityPosts)
        .where(and(eq(communityPosts.authorId, userId), isNull(communityPosts.deletedAt)))
        .orderBy(desc(communityPosts.viewCount), desc(communityPosts.id));
      const [[followers]] = await Promise.all([db.select({ n: count() }).from(communityFollows).where(eq(communityFollows.followeeId, userId))]);
      const totals = { posts: posts.length, views: 0, likes: 0, comments: 0, shares: 0, remixes: 0, followers: followers!.n };
      for (const p of posts) for (const [key, value] of Object.entries(totalsOf(p))) totals[key as keyof ReturnType<typeof totalsOf>] += value;
      const firstDay = posts.length > 0 ? posts.map((p) => utcDay(p.publishedAt)).sort()[0]! : utcDay(clock.now());
      return {
        totals,
        daily: await series(posts.map((p) => p.id), days, firstDay),
        topPosts: posts.slice(0, 5).map((p) => ({ id: p.id, caption: p.caption, publishedAt: p.publishedAt.toISOString(), ...totalsOf(p) })),
        viewHistorySince: VIEW_HISTORY_SINCE,
        note: NOTE,
      };
    },
  };
}
