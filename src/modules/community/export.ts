import { asc, eq } from 'drizzle-orm';
import { communityComments, communityFollows, communityPostLikes, communityPosts, communityReports } from '../../db/schema/community.js';
import type { CommunityDeps } from './deps.js';

/** A JSON file of the data export (the account module's `ExportFile` shape). */
const jsonFile = (path: string, data: unknown) => ({ path, content: `${JSON.stringify(data, null, 2)}\n`, compress: true });

/**
 * The community's part of a user's data export (`community/` in the archive): their posts (deleted ones flagged),
 * comments, likes, follows both ways and reports. Registered with the account service in `src/services.ts`.
 */
export function createCommunityExport(deps: CommunityDeps) {
  const { db, users } = deps;
  return {
    name: 'community',
    async collect(userId: string) {
      const [posts, comments, likes, following, followers, reports] = await Promise.all([
        db.select().from(communityPosts).where(eq(communityPosts.authorId, userId)).orderBy(asc(communityPosts.publishedAt)),
        db.select().from(communityComments).where(eq(communityComments.authorId, userId)).orderBy(asc(communityComments.createdAt)),
        db.select().from(communityPostLikes).where(eq(communityPostLikes.userId, userId)).orderBy(asc(communityPostLikes.createdAt)),
        db.select().from(communityFollows).where(eq(communityFollows.followerId, userId)),
        db.select().from(communityFollows).where(eq(communityFollows.followeeId, userId)),
        db.select().from(communityReports).where(eq(communityReports.reporterId, userId)).orderBy(asc(communityReports.createdAt)),
      ]);
      const people = await users.publicProfilesOf([...following.map((f) => f.followeeId), ...followers.map((f) => f.followerId)]);
      const handle = (id: string) => people.get(id)?.handle ?? null;
      return [
        jsonFile(
          'posts.json',
          posts.map((p) => ({
            id: p.id,
            generationId: p.generationId,
            caption: p.caption,
            tags: p.tags,
            remixOfPostId: p.remixOfPostId,
            counts: { likes: p.likeCount, comments: p.commentCount, views: p.viewCount, shares: p.shareCount, remixes: p.remixCount },
            publishedAt: p.publishedAt.toISOString(),
            deletedAt: p.deletedAt?.toISOString() ?? null,
          })),
        ),
        jsonFile(
          'comments.json',
          comments.map((c) => ({
            id: c.id,
            postId: c.postId,
            parentId: c.parentId,
            body: c.body,
            createdAt: c.createdAt.toISOString(),
            deletedAt: c.deletedAt?.toISOString() ?? null,
          })),
        ),
        jsonFile(
          'likes.json',
          likes.map((l) => ({ postId: l.postId, createdAt: l.createdAt.toISOString() })),
        ),
        jsonFile(
          'following.json',
          following.map((f) => ({ handle: handle(f.followeeId), since: f.createdAt.toISOString() })),
        ),
        jsonFile(
          'followers.json',
          followers.map((f) => ({ handle: handle(f.followerId), since: f.createdAt.toISOString() })),
        ),
        jsonFile(
          'reports.json',
          reports.map((r) => ({
            id: r.id,
            targetType: r.targetType,
            targetId: r.targetId,
            reason: r.reason,
            details: r.details,
            status: r.status,
            createdAt: r.createdAt.toISOString(),
          })),
        ),
      ];
    },
  };
}
