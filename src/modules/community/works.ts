import { and, desc, eq, inArray, isNull, ne, notInArray, or, sql, type SQL } from 'drizzle-orm';
import {
  communityPosts,
  communityWorkLikes,
  communityWorks,
  nativeWorkIds,
  type AuthorVisibility,
  type WorkContentType,
  type WorkSource,
  type WorkType,
} from '../../db/schema/community.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { afterCursor, toPage } from '../../platform/http/pagination.js';
import { notFound } from '../../platform/http/errors.js';
import type { Generation } from '../library/service.js';
import { maySee, visibleTo } from './audience.js';
import { UUID, type CommunityDeps } from './deps.js';
import type { PostRow } from './post-statements.js';
import { LISTED } from './views.js';

type WorkRow = typeof communityWorks.$inferSelect;

export const WRAPPER_KEY = { WORK: 'userWork', SKIT: 'userSkit', TEMPLATE_CREATIVE: 'userTemplateCreative' } as const satisfies Record<WorkType, string>;

export interface WorksQuery {
  limit: number;
  cursor?: string;
  contentType?: WorkContentType;
  source?: WorkSource;
  sort: 'recent' | 'top';
}

const noSuchWork = () => notFound('No such work in the gallery.');

/** The media of a generation as a gallery work, or null when it has none to show (text, a video not rendered yet). */
function mediaOf(gen: Generation): { contentType: WorkContentType; url: string; durationMs: number | null } | null {
  const output = gen.output as { images?: Array<{ url?: string }>; videos?: Array<{ url?: string; durationSeconds?: number }>; audio?: { url?: string } };
  if (gen.kind === 'IMAGE' && output.images?.[0]?.url) return { contentType: 'image', url: output.images[0].url, durationMs: null };
  if (gen.kind === 'VIDEO' && output.videos?.[0]?.url) {
    const seconds = output.videos[0].durationSeconds;
    return { contentType: 'video', url: output.videos[0].url, durationMs: typeof seconds === 'number' ? Math.round(seconds * 1000) : null };
  }
  if (gen.kind === 'AUDIO' && output.audio?.url) return { contentType: 'audio', url: output.audio.url, durationMs: null };
  return null;
}

export function createWorks(deps: CommunityDeps) {
  const { db, clock, users, blocks } = deps;

  /** Outside a transaction (`inTx` absent) the authors' profiles come through the auth module's cache. */
  async function toEnvelopes(rows: WorkRow[], viewerId: string | null, inTx?: DbOrTx) {
    if (rows.length === 0) return [];
    const tx = inTx ?? db;
    const ids = rows.map((r) => r.id);
    const postIds = rows.map((r) => r.postId).filter((id): id is string => id !== null);
    const [liked, posts, people] = await Promise.all([
      viewerId
        ? tx
            .select({ workId: communityWorkLikes.workId })
            .from(communityWorkLikes)
            .where(and(eq(communityWorkLikes.userId, viewerId), inArray(communityWorkLikes.workId, ids)))
            .then((r) => new Set(r.map((x) => x.workId)))
        : new Set<string>(),
      postIds.length > 0
        ? tx
            .select({ id: communityPosts.id, shareCount: communityPosts.shareCount, remixCount: communityPosts.remixCount })
            .from(communityPosts)
            .where(inArray(communityPosts.id, postIds))
            .then((r) => new Map(r.map((p) => [p.id, p])))
        : new Map<string, { shareCount: number; remixCount: number }>(),
      users.publicProfilesOf(
        rows.map((r) => r.userId).filter((id): id is string => id !== null),
        inTx,
      ),
    ]);
    return rows.map((row) => {
      const favored = liked.has(row.id);
      const post = row.postId ? posts.get(row.postId) : undefined;
      const person = row.userId ? people.get(row.userId) : undefined;
      const userProfile = person
        ? { userId: person.id, userName: person.name ?? person.handle, userAvatar: person.avatarUrl ? [person.avatarUrl] : [], handle: person.handle }
        : { userId: row.authorExternalId ?? '', userName: row.authorName ?? '', userAvatar: row.authorAvatarUrl ? [row.authorAvatarUrl] : [] };
      return {
        type: row.type,
        [WRAPPER_KEY[row.type]]: {
          workId: row.workId,
          contentType: row.contentType,
          resource: { resource: row.resourceUrl, width: row.width, height: row.height, duration: row.durationMs },
          cover: { resource: row.coverUrl ?? row.resourceUrl },
          starNum: row.starNum,
          favored,
          starred: favored,
          viewCountLocal: row.localViewCount,
          userProfile,
          _platform: {
            id: row.id,
            source: row.source,
            externalId: row.externalId,
            localLikeCount: row.localLikeCount,
            localViewCount: row.localViewCount,
            sourceLikeCount: row.sourceLikeCount,
            shareCount: post?.shareCount ?? 0,
            remixCount: post?.remixCount ?? 0,
            remixable: row.source === 'NATIVE',
          },
        },
      };
    });
  }

  /**
   * A shown work by `_platform.id` or the source's `externalId`, or 404 (hidden works, works of an author whose audience
   * leaves the viewer out, and blocked authors too).
   */
  async function shownWork(idOrExternal: string, viewerId: string | null, tx: DbOrTx = db): Promise<WorkRow> {
    const match = UUID.test(idOrExternal)
      ? or(eq(communityWorks.id, idOrExternal), eq(communityWorks.externalId, idOrExternal))
      : eq(communityWorks.externalId, idOrExternal);
    const [row] = await tx
      .select()
      .from(communityWorks)
      .where(and(match, isNull(communityWorks.hiddenAt)))
      .limit(1);
    if (!row) throw noSuchWork();
    if (row.userId && !(await maySee(tx, viewerId, { id: row.userId, visibility: row.authorVisibility }))) throw noSuchWork();
    if (viewerId && row.userId && row.userId !== viewerId && (await blocks.blockedEitherWay(tx, viewerId, row.userId))) throw noSuchWork();
    return row;
  }

  async function setLike(userId: string, idOrExternal: string, like: boolean) {
    return db.transaction(async (tx) => {
      const work = await shownWork(idOrExternal, userId, tx);
      const changed = like
        ? await tx
            .insert(communityWorkLikes)
            .values({ workId: work.id, userId, createdAt: clock.now() })
            .onConflictDoNothing()
            .returning({ id: communityWorkLikes.workId })
        : await tx
            .delete(communityWorkLikes)
            .where(and(eq(communityWorkLikes.workId, work.id), eq(communityWorkLikes.userId, userId)))
            .returning({ id: communityWorkLikes.workId });
      let starNum = work.starNum;
      if (changed.length > 0) {
        const [row] = await tx
          .update(communityWorks)
          .set({ localLikeCount: sql`${communityWorks.localLikeCount} + ${like ? 1 : -1}` })
          .where(eq(communityWorks.id, work.id))
          .returning({ starNum: communityWorks.starNum });
        starNum = row!.starNum;
      }
      return { ok: true as const, starNum, favored: like };
    });
  }

  return {
    /** Creates or refreshes the NATIVE work of a published post (same work on every republication), with its audience. */
    async mirrorPost(tx: Tx, post: PostRow, gen: Generation): Promise<void> {
      const media = mediaOf(gen);
      if (!media) return;
      const now = clock.now();
      const shown = {
        contentType: media.contentType,
        resourceUrl: media.url,
        durationMs: media.durationMs,
        coverUrl: gen.thumbnailUrl ?? (media.contentType === 'image' ? media.url : null),
        authorVisibility: post.authorVisibility,
      };
      await tx
        .insert(communityWorks)
        .values({
          source: 'NATIVE',
          type: 'WORK',
          workId: sql`nextval('${sql.raw(nativeWorkIds.seqName!)}')`,
          postId: post.id,
          userId: post.authorId,
          ...shown,
          publishedAt: post.publishedAt,
          updatedAt: now,
          hiddenAt: post.hiddenAt,
        })
        .onConflictDoUpdate({ target: communityWorks.postId, set: { ...shown, hiddenAt: post.hiddenAt, updatedAt: now } });
    },

    /** A deleted account's native works leave the gallery. */
    async hideAllOf(tx: Tx, userId: string, at: Date): Promise<void> {
      await tx
        .update(communityWorks)
        .set({ hiddenAt: at, updatedAt: at })
        .where(and(eq(communityWorks.userId, userId), isNull(communityWorks.hiddenAt)));
    },

    /** The works mirroring the author's listed posts take the author's new audience (see `posts.setAuthorVisibility`). */
    async setAuthorVisibility(tx: Tx, authorId: string, visibility: AuthorVisibility): Promise<void> {
      const listedPosts = tx
        .select({ id: communityPosts.id })
        .from(communityPosts)
        .where(and(eq(communityPosts.authorId, authorId), LISTED));
      await tx
        .update(communityWorks)
        .set({ authorVisibility: visibility })
        .where(and(inArray(communityWorks.postId, listedPosts), ne(communityWorks.authorVisibility, visibility)));
    },

    /** Hides the mirrored work of a deleted (or moderated) post. */
    async hideForPost(tx: Tx, postId: string): Promise<void> {
      await tx.update(communityWorks).set({ hiddenAt: clock.now(), updatedAt: clock.now() }).where(eq(communityWorks.postId, postId));
    },

    async list(query: WorksQuery, viewerId: string | null) {
      const hidden = viewerId ? await blocks.hiddenUserIds(viewerId) : [];
      const filters: (SQL | undefined)[] = [
        isNull(communityWorks.hiddenAt),
        query.contentType ? eq(communityWorks.contentType, query.contentType) : undefined,
        query.source ? eq(communityWorks.source, query.source) : undefined,
        hidden.length > 0 ? or(isNull(communityWorks.userId), notInArray(communityWorks.userId, hidden)) : undefined,
        // Imported works are PUBLIC (no user), so the filter lets them all through.
        visibleTo(viewerId, communityWorks.authorVisibility, communityWorks.userId),
      ];
      const sortColumn = query.sort === 'top' ? communityWorks.starNum : communityWorks.publishedAt;
      const rows = await db
        .select()
        .from(communityWorks)
        .where(afterCursor(sortColumn, communityWorks.id, query.cursor, and(...filters)))
        .orderBy(desc(sortColumn), desc(communityWorks.id))
        .limit(query.limit + 1);
      const page = toPage(rows, query.limit, (w) => ({ sort: query.sort === 'top' ? w.starNum : w.publishedAt.toISOString(), id: w.id }));
      return { items: await toEnvelopes(page.items, viewerId), nextCursor: page.nextCursor };
    },

    async get(idOrExternal: string, viewerId: string | null) {
      const [envelope] = await toEnvelopes([await shownWork(idOrExternal, viewerId)], viewerId);
      return envelope!;
    },

    /** Best-effort view counter: every call counts (not deduplicated); a work the viewer may not see is a 404. */
    async view(idOrExternal: string, viewerId: string | null) {
      const work = await shownWork(idOrExternal, viewerId);
      const [row] = await db
        .update(communityWorks)
        .set({ localViewCount: sql`${communityWorks.localViewCount} + 1` })
        .where(eq(communityWorks.id, work.id))
        .returning({ viewCount: communityWorks.localViewCount });
      return { ok: true as const, viewCount: row!.viewCount };
    },

    like: (userId: string, idOrExternal: string) => setLike(userId, idOrExternal, true),
    unlike: (userId: string, idOrExternal: string) => setLike(userId, idOrExternal, false),
  };
}

export type Works = ReturnType<typeof createWorks>;
