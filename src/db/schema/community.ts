import { sql } from 'drizzle-orm';
import { bigint, date, doublePrecision, index, integer, pgSequence, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { generations } from './library.js';
import { createdAt, idColumn, tz } from './columns.js';

/** A post is listed in feeds while it is neither deleted by its author nor hidden by moderation. */
const LISTED = sql`deleted_at is null and hidden_at is null`;

/**
 * Who may see an author's posts and works: the author's `profileVisibility` preference (the account module's), copied
 * onto each of their rows so a feed filters on the row it already reads. Set at publish, and on every row of the author
 * in the transaction that changes the preference.
 */
export const AUTHOR_VISIBILITIES = ['PUBLIC', 'FOLLOWERS_ONLY', 'PRIVATE'] as const;
export type AuthorVisibility = (typeof AUTHOR_VISIBILITIES)[number];

/**
 * A native social post of one generation (spec A "Post"). One post per generation: republishing updates it.
 * Counters are kept on the row, changed in the same transaction as the rows they count.
 * Indexes are declared ascending: PostgreSQL walks them backwards for `ORDER BY ... DESC` (NULLS FIRST, the default),
 * which a `DESC NULLS LAST` index could not serve.
 */
export const communityPosts = pgTable(
  'community_posts',
  {
    id: idColumn(),
    authorId: uuid('author_id')
      .notNull()
      .references(() => users.id),
    generationId: uuid('generation_id')
      .notNull()
      .references(() => generations.id),
    caption: text('caption').notNull().default(''),
    tags: text('tags')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    remixOfPostId: uuid('remix_of_post_id'),
    likeCount: integer('like_count').notNull().default(0),
    commentCount: integer('comment_count').notNull().default(0),
    viewCount: integer('view_count').notNull().default(0),
    shareCount: integer('share_count').notNull().default(0),
    remixCount: integer('remix_count').notNull().default(0),
    publishedAt: tz('published_at').notNull(),
    updatedAt: tz('updated_at').notNull(),
    deletedAt: tz('deleted_at'),
    hiddenAt: tz('hidden_at'),
    authorVisibility: text('author_visibility', { enum: AUTHOR_VISIBILITIES }).notNull().default('PUBLIC'),
  },
  (t) => [
    uniqueIndex('community_posts_generation_key').on(t.generationId),
    index('community_posts_recent_idx').on(t.publishedAt, t.id).where(LISTED),
    index('community_posts_author_idx').on(t.authorId, t.publishedAt, t.id).where(LISTED),
    index('community_posts_remix_idx').on(t.remixOfPostId, t.publishedAt, t.id).where(LISTED),
    index('community_posts_tags_idx').using('gin', t.tags),
  ],
);

/**
 * Stored trending scores, one row per published post, kept apart from the post so the 15-minute recompute (one
 * UPDATE over every row) neither locks the posts that likes and views update nor rewrites their wide rows and indexes.
 * Double-buffered: the recompute of epoch `e` writes the column of e's parity, so a reader paging with a cursor of
 * the previous epoch still finds its scores intact (see feeds.ts). `author_id` lets the feed leave hidden authors out
 * before joining the posts.
 */
export const communityPostScores = pgTable(
  'community_post_scores',
  {
    postId: uuid('post_id')
      .primaryKey()
      .references(() => communityPosts.id),
    authorId: uuid('author_id').notNull(),
    scoreEven: doublePrecision('score_even').notNull().default(0),
    scoreOdd: doublePrecision('score_odd').notNull().default(0),
  },
  (t) => [index('community_post_scores_even_idx').on(t.scoreEven, t.postId), index('community_post_scores_odd_idx').on(t.scoreOdd, t.postId)],
);

/** Which trending epoch is current (one row, id = 1). */
export const communityTrendingState = pgTable('community_trending_state', {
  id: integer('id').primaryKey(),
  epoch: integer('epoch').notNull(),
  computedAt: tz('computed_at').notNull(),
});

export const communityPostLikes = pgTable(
  'community_post_likes',
  {
    postId: uuid('post_id')
      .notNull()
      .references(() => communityPosts.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.postId, t.userId] }), index('community_post_likes_user_idx').on(t.userId, t.postId)],
);

/** Who liked a post once: a like after an unlike does not notify the author again. */
export const communityLikeNotices = pgTable(
  'community_like_notices',
  {
    postId: uuid('post_id')
      .notNull()
      .references(() => communityPosts.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
  },
  (t) => [primaryKey({ columns: [t.postId, t.userId] })],
);

/** Views and shares of a post per UTC day (the analytics' daily series). */
export const communityPostDaily = pgTable(
  'community_post_daily',
  {
    postId: uuid('post_id')
      .notNull()
      .references(() => communityPosts.id),
    day: date('day', { mode: 'string' }).notNull(),
    views: integer('views').notNull().default(0),
    shares: integer('shares').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.postId, t.day] })],
);

/** A comment on a post; `parentId` makes it a reply (one level). Deletion is soft. */
export const communityComments = pgTable(
  'community_comments',
  {
    id: idColumn(),
    postId: uuid('post_id')
      .notNull()
      .references(() => communityPosts.id),
    authorId: uuid('author_id')
      .notNull()
      .references(() => users.id),
    parentId: uuid('parent_id'),
    body: text('body').notNull(),
    createdAt: createdAt(),
    deletedAt: tz('deleted_at'),
    /** Hidden by moderation: left out of listings like a deleted comment, kept for the record. */
    hiddenAt: tz('hidden_at'),
  },
  (t) => [index('community_comments_post_idx').on(t.postId, t.createdAt, t.id), index('community_comments_parent_idx').on(t.parentId, t.createdAt, t.id)],
);

export const communityFollows = pgTable(
  'community_follows',
  {
    followerId: uuid('follower_id')
      .notNull()
      .references(() => users.id),
    followeeId: uuid('followee_id')
      .notNull()
      .references(() => users.id),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.followerId, t.followeeId] }), index('community_follows_followee_idx').on(t.followeeId, t.followerId)],
);

export const WORK_TYPES = ['WORK', 'SKIT', 'TEMPLATE_CREATIVE'] as const;
export type WorkType = (typeof WORK_TYPES)[number];
export const WORK_CONTENT_TYPES = ['video', 'image', 'audio'] as const;
export type WorkContentType = (typeof WORK_CONTENT_TYPES)[number];
export const WORK_SOURCES = ['IMPORTED', 'NATIVE'] as const;
export type WorkSource = (typeof WORK_SOURCES)[number];

/** `workId` of native works: far above the ids the imported feeds use. */
export const nativeWorkIds = pgSequence('community_native_work_id_seq', { startWith: 1_000_000_000_000 });

/**
 * A gallery entry (spec A "Community work"): imported from an external feed (unique by `external_id`) or the mirror
 * of a native post (unique by `post_id`). `star_num` = imported likes + local likes, kept as a generated column so
 * the `top` sort walks an index.
 */
export const communityWorks = pgTable(
  'community_works',
  {
    id: idColumn(),
    source: text('source', { enum: WORK_SOURCES }).notNull(),
    type: text('type', { enum: WORK_TYPES }).notNull().default('WORK'),
    /** The source's integer id (`workId`); native works take one from a sequence. */
    workId: bigint('work_id', { mode: 'number' }).notNull(),
    externalId: text('external_id'),
    postId: uuid('post_id').references(() => communityPosts.id),
    /** The native author; null for imported works. */
    userId: uuid('user_id').references(() => users.id),
    contentType: text('content_type', { enum: WORK_CONTENT_TYPES }).notNull(),
    resourceUrl: text('resource_url').notNull(),
    width: integer('width'),
    height: integer('height'),
    durationMs: integer('duration_ms'),
    coverUrl: text('cover_url'),
    /** Imported author (native works read the author's profile). */
    authorExternalId: text('author_external_id'),
    authorName: text('author_name'),
    authorAvatarUrl: text('author_avatar_url'),
    sourceLikeCount: integer('source_like_count').notNull().default(0),
    localLikeCount: integer('local_like_count').notNull().default(0),
    localViewCount: integer('local_view_count').notNull().default(0),
    starNum: integer('star_num')
      .generatedAlwaysAs(sql`source_like_count + local_like_count`)
      .notNull(),
    publishedAt: tz('published_at').notNull(),
    updatedAt: tz('updated_at').notNull(),
    hiddenAt: tz('hidden_at'),
    /** The native author's audience (see `AUTHOR_VISIBILITIES`); imported works are PUBLIC. */
    authorVisibility: text('author_visibility', { enum: AUTHOR_VISIBILITIES }).notNull().default('PUBLIC'),
  },
  (t) => [
    uniqueIndex('community_works_external_key')
      .on(t.externalId)
      .where(sql`source = 'IMPORTED'`),
    uniqueIndex('community_works_post_key').on(t.postId),
    index('community_works_recent_idx')
      .on(t.publishedAt, t.id)
      .where(sql`hidden_at is null`),
    index('community_works_top_idx')
      .on(t.starNum, t.id)
      .where(sql`hidden_at is null`),
  ],
);

export const communityWorkLikes = pgTable(
  'community_work_likes',
  {
    workId: uuid('work_id')
      .notNull()
      .references(() => communityWorks.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workId, t.userId] })],
);

export const REPORT_TARGETS = ['POST', 'COMMENT', 'USER'] as const;
export type ReportTarget = (typeof REPORT_TARGETS)[number];
export const REPORT_STATUSES = ['OPEN', 'REVIEWING', 'ACTIONED', 'DISMISSED'] as const;

/** The moderation queue: one open report per reporter and target (a repeat returns the open one). */
export const communityReports = pgTable(
  'community_reports',
  {
    id: idColumn(),
    reporterId: uuid('reporter_id')
      .notNull()
      .references(() => users.id),
    targetType: text('target_type', { enum: REPORT_TARGETS }).notNull(),
    targetId: uuid('target_id').notNull(),
    reason: text('reason').notNull(),
    details: text('details'),
    status: text('status', { enum: REPORT_STATUSES }).notNull().default('OPEN'),
    createdAt: createdAt(),
    resolvedAt: tz('resolved_at'),
    /** The operator who resolved the report (not a foreign key: the record outlives the operator's account). */
    resolvedBy: uuid('resolved_by'),
    resolutionNote: text('resolution_note'),
  },
  (t) => [
    uniqueIndex('community_reports_open_key')
      .on(t.reporterId, t.targetType, t.targetId)
      .where(sql`status = 'OPEN'`),
    index('community_reports_queue_idx').on(t.status, t.createdAt, t.id),
    index('community_reports_created_idx').on(t.createdAt, t.id),
  ],
);
