import { Type } from 'typebox';
import type { GenerationKind } from '../../db/schema/library.js';
import { REPORT_STATUSES, REPORT_TARGETS, WORK_CONTENT_TYPES, WORK_SOURCES, WORK_TYPES } from '../../db/schema/community.js';
import { MODEL_TYPES } from '../catalog/service.js';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

/** Limits of spec A's Limits table, plus the house's own where the spec leaves them open (docs/decisions.md). */
export const COMMUNITY_LIMITS = {
  feedDefault: 20,
  feedMax: 50,
  worksDefault: 20,
  worksMax: 50,
  captionMax: 2000,
  tagsMax: 10,
  tagMax: 40,
  commentMax: 2000,
  reportReasonMax: 120,
  reportDetailsMax: 2000,
  analyticsDaysDefault: 30,
  analyticsDaysMax: 90,
} as const;

/** The library's generation kinds (its schema file is the library's; a type import checks the list). */
const GENERATION_KINDS = ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO'] as const satisfies readonly GenerationKind[];

const Id = Type.String({ minLength: 1, maxLength: 64 });
export const PostIdParams = StrictObject({ id: Id });
export const HandleParams = StrictObject({ handle: Type.String({ minLength: 1, maxLength: 64 }) });
export const WorkIdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 128, description: 'The `_platform.id` or the source `externalId`' }) });

const Author = Type.Object({ id: Type.String(), name: Nullable(Type.String()), handle: Type.String(), avatarUrl: Nullable(Type.String()) });

export const PostSchema = Type.Object({
  id: Type.String(),
  caption: Type.String(),
  tags: Type.Array(Type.String()),
  likeCount: Type.Integer(),
  commentCount: Type.Integer(),
  viewCount: Type.Integer(),
  shareCount: Type.Integer(),
  remixCount: Type.Integer(),
  remixOf: Nullable(Type.Object({ id: Type.String(), author: Nullable(Author) }, { description: 'The post this one remixes' })),
  trendingScore: Type.Number({ description: 'The stored score of the last recompute (every 15 minutes); 0 before a post is first scored' }),
  publishedAt: DateTime,
  author: Author,
  generation: Type.Object({
    id: Type.String(),
    kind: Type.Enum([...GENERATION_KINDS]),
    prompt: Type.String(),
    thumbnailUrl: Nullable(Type.String()),
    output: Type.Object({}, { additionalProperties: true }),
    model: Nullable(Type.Object({ slug: Type.String(), displayName: Type.String(), type: Type.Enum([...MODEL_TYPES]) })),
  }),
  likedByMe: Type.Boolean({ description: 'false when anonymous' }),
});
export const PostsPage = Page(PostSchema);

export const FeedQuery = StrictObject({
  ...pageQuery(COMMUNITY_LIMITS.feedDefault, COMMUNITY_LIMITS.feedMax),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: COMMUNITY_LIMITS.tagMax + 1, description: 'A hashtag, with or without #' })),
});
export const PageQuery = StrictObject(pageQuery(COMMUNITY_LIMITS.feedDefault, COMMUNITY_LIMITS.feedMax));

export const PublishBody = StrictObject({
  generationId: Type.String({ minLength: 1, maxLength: 64 }),
  caption: Type.Optional(Type.String({ maxLength: COMMUNITY_LIMITS.captionMax })),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: COMMUNITY_LIMITS.tagMax }), { maxItems: COMMUNITY_LIMITS.tagsMax })),
  remixOfPostId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});

const CommentAuthor = Type.Object({ name: Nullable(Type.String()), handle: Type.String(), avatarUrl: Nullable(Type.String()) });
const Reply = Type.Object({
  id: Type.String(),
  body: Type.String(),
  author: CommentAuthor,
  replies: Type.Array(Type.Unknown(), { maxItems: 0 }),
  createdAt: DateTime,
});
export const CommentSchema = Type.Object({ id: Type.String(), body: Type.String(), author: CommentAuthor, replies: Type.Array(Reply), createdAt: DateTime });
export const CommentsList = Type.Object({ items: Type.Array(CommentSchema) });
export const CommentBody = StrictObject({
  body: Type.String({ minLength: 1, maxLength: COMMUNITY_LIMITS.commentMax, pattern: '\\S' }),
  parentId: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Makes a reply (one level; a reply to a reply joins its top-level comment)' }),
  ),
});

export const ShareResponse = Type.Object({
  ok: Type.Literal(true),
  shareCount: Type.Integer(),
  url: Type.String(),
  links: Type.Object({
    x: Type.String(),
    facebook: Type.String(),
    linkedin: Type.String(),
    reddit: Type.String(),
    whatsapp: Type.String(),
    telegram: Type.String(),
    email: Type.String(),
  }),
});

const Totals = { views: Type.Integer(), likes: Type.Integer(), comments: Type.Integer(), shares: Type.Integer(), remixes: Type.Integer() };
const Daily = Type.Array(
  Type.Object({ date: Type.String({ format: 'date' }), views: Type.Integer(), likes: Type.Integer(), comments: Type.Integer(), shares: Type.Integer() }),
);
export const AnalyticsQuery = StrictObject({
  days: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: COMMUNITY_LIMITS.analyticsDaysMax,
      default: COMMUNITY_LIMITS.analyticsDaysDefault,
      description: 'Length of the daily series (UTC days, ending today)',
    }),
  ),
});
export const PostAnalytics = Type.Object({
  postId: Type.String(),
  totals: Type.Object(Totals, { description: 'All-time totals' }),
  daily: Daily,
  viewHistorySince: Type.String({ format: 'date' }),
  note: Type.String(),
});
export const Dashboard = Type.Object({
  totals: Type.Object({ posts: Type.Integer(), followers: Type.Integer(), ...Totals }),
  daily: Daily,
  topPosts: Type.Array(Type.Object({ id: Type.String(), caption: Type.String(), publishedAt: DateTime, ...Totals })),
  viewHistorySince: Type.String({ format: 'date' }),
  note: Type.String(),
});

export const Recipe = Type.Object({
  postId: Type.String(),
  generationId: Type.String(),
  kind: Type.Enum([...GENERATION_KINDS]),
  prompt: Type.String(),
  model: Type.Optional(Type.Object({ slug: Type.String(), displayName: Type.String(), type: Type.Enum([...MODEL_TYPES]) })),
  parameters: Type.Object(
    { count: Type.Optional(Type.Integer()), durationSeconds: Type.Optional(Type.Number()) },
    { description: 'Studio fields known for this generation; unknown ones are omitted' },
  ),
});

export const PublicProfile = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  handle: Type.String(),
  avatarUrl: Nullable(Type.String()),
  bio: Nullable(Type.String()),
  createdAt: DateTime,
  _count: Type.Object({ posts: Type.Integer(), followers: Type.Integer(), following: Type.Integer() }),
  followingThem: Type.Boolean({ description: 'false when anonymous' }),
});

export const ReportBody = StrictObject({
  targetType: Type.Enum([...REPORT_TARGETS]),
  targetId: Type.String({ minLength: 1, maxLength: 64, description: 'A post or comment id; a user id or handle' }),
  reason: Type.String({ minLength: 1, maxLength: COMMUNITY_LIMITS.reportReasonMax, pattern: '\\S' }),
  details: Type.Optional(Type.String({ maxLength: COMMUNITY_LIMITS.reportDetailsMax })),
});
export const ReportSchema = Type.Object({
  id: Type.String(),
  targetType: Type.Enum([...REPORT_TARGETS]),
  targetId: Type.String(),
  reason: Type.String(),
  details: Nullable(Type.String()),
  status: Type.Enum([...REPORT_STATUSES]),
  createdAt: DateTime,
});

const WorkInner = Type.Object({
  workId: Type.Integer(),
  contentType: Type.Enum([...WORK_CONTENT_TYPES]),
  resource: Type.Object({
    resource: Type.String(),
    width: Nullable(Type.Integer()),
    height: Nullable(Type.Integer()),
    duration: Nullable(Type.Integer({ description: 'milliseconds' })),
  }),
  cover: Type.Object({ resource: Type.String() }),
  starNum: Type.Integer({ description: 'imported likes + local likes' }),
  favored: Type.Boolean(),
  starred: Type.Boolean(),
  viewCountLocal: Type.Integer(),
  userProfile: Type.Object({ userId: Type.String(), userName: Type.String(), userAvatar: Type.Array(Type.String()), handle: Type.Optional(Type.String()) }),
  _platform: Type.Object({
    id: Type.String(),
    source: Type.Enum([...WORK_SOURCES]),
    externalId: Nullable(Type.String()),
    localLikeCount: Type.Integer(),
    localViewCount: Type.Integer(),
    sourceLikeCount: Type.Integer(),
    shareCount: Type.Integer(),
    remixCount: Type.Integer(),
    remixable: Type.Boolean(),
  }),
});
export const WorkEnvelope = Type.Object(
  {
    type: Type.Enum([...WORK_TYPES]),
    userWork: Type.Optional(WorkInner),
    userSkit: Type.Optional(WorkInner),
    userTemplateCreative: Type.Optional(WorkInner),
  },
  { description: 'Read the wrapper key that matches `type`: WORK → userWork, SKIT → userSkit, TEMPLATE_CREATIVE → userTemplateCreative' },
);
export const WorksPage = Page(WorkEnvelope);
export const WorksQuery = StrictObject({
  ...pageQuery(COMMUNITY_LIMITS.worksDefault, COMMUNITY_LIMITS.worksMax),
  contentType: Type.Optional(Type.Enum([...WORK_CONTENT_TYPES])),
  source: Type.Optional(Type.Enum([...WORK_SOURCES])),
  sort: Type.Optional(Type.Enum(['recent', 'top'], { default: 'recent' })),
});
export const WorkLikeResponse = Type.Object({ ok: Type.Literal(true), starNum: Type.Integer(), favored: Type.Boolean() });
export const WorkViewResponse = Type.Object({ ok: Type.Literal(true), viewCount: Type.Integer() });

/** One work of an external feed for the import command: the gallery envelope as the source publishes it. */
const ImportInner = Type.Object({
  workId: Type.Integer({ minimum: 0 }),
  externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  contentType: Type.Enum([...WORK_CONTENT_TYPES]),
  resource: Type.Object({
    resource: Type.String({ minLength: 1 }),
    width: Type.Optional(Nullable(Type.Integer())),
    height: Type.Optional(Nullable(Type.Integer())),
    duration: Type.Optional(Nullable(Type.Integer())),
  }),
  cover: Type.Optional(Type.Object({ resource: Type.String({ minLength: 1 }) })),
  starNum: Type.Optional(Type.Integer({ minimum: 0 })),
  userProfile: Type.Object({
    userId: Type.Union([Type.String(), Type.Integer()]),
    userName: Type.String(),
    userAvatar: Type.Optional(Type.Array(Type.String())),
  }),
  createTime: Type.Optional(Type.String({ format: 'date-time' })),
});
export const ImportFeedSchema = Type.Object({
  items: Type.Array(
    Type.Object({
      type: Type.Enum([...WORK_TYPES]),
      userWork: Type.Optional(ImportInner),
      userSkit: Type.Optional(ImportInner),
      userTemplateCreative: Type.Optional(ImportInner),
    }),
  ),
});
