import { namedStatement, type NamedStatement } from '../../platform/db/bound.js';
import type { AuthorVisibility, communityPosts } from '../../db/schema/community.js';

/**
 * The feed pages' statements as constant SQL, one per shape (signed in or not, with a cursor or not, ...), each built
 * once: a page runs a named prepared statement instead of building a query per request (on PostgreSQL it is parsed
 * once per connection and, its LIMIT and filters being parameters, still planned with its values). Their conditions
 * are the listing rules of `views.ts` (LISTED) and `audience.ts` (who may see an author) written out; the plan guard
 * (`test/plans/feeds.test.ts`) checks each shape, as sent, walks its index.
 */

/** A post row's columns, as `toPostRow` reads them. */
const POST_COLUMNS = `p.id, p.author_id, p.generation_id, p.caption, p.tags, p.remix_of_post_id, p.like_count, p.comment_count,
  p.view_count, p.share_count, p.remix_count, p.published_at, p.updated_at, p.deleted_at, p.hidden_at, p.author_visibility`;

/** The listing predicate of the partial indexes (views.ts `LISTED`), on the posts aliased `alias`. */
const listed = (alias: string) => `${alias}.deleted_at is null and ${alias}.hidden_at is null`;

/** The current epoch's score of the joined score row `s` (0 without one): what every listed post shows. */
const CURRENT_SCORE = `coalesce(case when coalesce((select t.epoch from community_trending_state t where t.id = 1), 0) % 2 = 0
  then s.score_even else s.score_odd end, 0)`;

type Param = (name: string, cast?: string) => string;

/** Whether the viewer likes post `p` (false for an anonymous reader). */
const likedBy = (param: Param, signedIn: boolean) =>
  signedIn ? `exists (select 1 from community_post_likes l where l.post_id = p.id and l.user_id = ${param('viewer', '::uuid')})` : 'false';

/** Posts whose author's audience includes the viewer (audience.ts `visibleTo`), on the posts aliased `p`. */
const seenBy = (param: Param, signedIn: boolean) =>
  signedIn
    ? `(p.author_visibility = 'PUBLIC' or p.author_id = ${param('viewer', '::uuid')} or (p.author_visibility = 'FOLLOWERS_ONLY'
        and exists (select 1 from community_follows fv where fv.follower_id = ${param('viewer', '::uuid')} and fv.followee_id = p.author_id)))`
    : `p.author_visibility = 'PUBLIC'`;

/** Leaves the viewer's hidden authors out; an array parameter, so one shape serves any number of them. */
const notHidden = (param: Param, column: string) => `${column} <> all(${param('hidden', '::text[]')}::uuid[])`;

const selectPost = (param: Param, signedIn: boolean) =>
  `select ${POST_COLUMNS}, ${CURRENT_SCORE} as score, ${likedBy(param, signedIn)} as liked_by_me,
    o.author_id as original_author_id, o.author_visibility as original_visibility`;

/** The remixed original `o` of post `p` (its author and audience, for the remix's credit), and its score row `s`. */
const JOIN_ORIGINAL_AND_SCORE = 'left join community_posts o on o.id = p.remix_of_post_id left join community_post_scores s on s.post_id = p.id';

/** Which posts a newest-first page keeps besides the listing rules. */
export type NewestFilter = 'all' | 'tag' | 'author' | 'remixes';

const FILTERS: Record<NewestFilter, (param: Param) => string> = {
  all: () => 'true',
  tag: (param) => `p.tags @> array[${param('tag', '::text')}]`,
  author: (param) => `p.author_id = ${param('author', '::uuid')}`,
  remixes: (param) => `p.remix_of_post_id = ${param('original', '::uuid')}`,
};

const shapes = new Map<string, NamedStatement>();
const shape = (key: string, build: (param: Param) => string): NamedStatement => {
  let statement = shapes.get(key);
  if (!statement) {
    statement = namedStatement(build);
    shapes.set(key, statement);
  }
  return statement;
};

/**
 * A newest-first page: values `viewer` (signed in), `hidden` (signed in: uuids), the filter's value (`tag`, `author`
 * or `original`), `cursorAt` and `cursorId` (with a cursor) and `limit`.
 */
export const newestFirstStatement = (filter: NewestFilter, signedIn: boolean, withCursor: boolean): NamedStatement =>
  shape(`newest:${filter}:${signedIn}:${withCursor}`, (param) =>
    [
      `${selectPost(param, signedIn)} from community_posts p ${JOIN_ORIGINAL_AND_SCORE}`,
      `where ${listed('p')} and ${FILTERS[filter](param)} and ${seenBy(param, signedIn)}`,
      signedIn ? `and ${notHidden(param, 'p.author_id')}` : '',
      withCursor ? `and (p.published_at, p.id) < (${param('cursorAt', '::timestamptz')}, ${param('cursorId', '::uuid')})` : '',
      `order by p.published_at desc, p.id desc limit ${param('limit', '::int')}`,
    ].join('\n'),
  );

/**
 * The trending page by the score column of `epoch`'s parity: values as `newestFirstStatement` (no filter), the cursor
 * being `cursorScore` and `cursorId`. Walks the score index, leaving hidden authors out on the narrow score table.
 */
export const trendingStatement = (column: 'score_even' | 'score_odd', signedIn: boolean, withCursor: boolean): NamedStatement =>
  shape(`trending:${column}:${signedIn}:${withCursor}`, (param) =>
    [
      `${selectPost(param, signedIn)}, s.${column} as ordered`,
      `from community_post_scores s join community_posts p on p.id = s.post_id left join community_posts o on o.id = p.remix_of_post_id`,
      `where ${listed('p')} and ${seenBy(param, signedIn)}`,
      signedIn ? `and ${notHidden(param, 's.author_id')}` : '',
      withCursor ? `and (s.${column}, s.post_id) < (${param('cursorScore', '::double precision')}, ${param('cursorId', '::uuid')})` : '',
      `order by s.${column} desc, s.post_id desc limit ${param('limit', '::int')}`,
    ].join('\n'),
  );

/**
 * The following feed (see `feeds.following` for the plan): the newest post after the cursor of each followee not hidden
 * and not PRIVATE (one probe of the author index each), the `limit` followees whose newest is newest, the keys of each
 * one's newest `limit` posts (index-only), the newest `limit` of those, then their rows.
 */
export const followingStatement = (withCursor: boolean): NamedStatement =>
  shape(`following:${withCursor}`, (param) => {
    const cursor = withCursor ? `and (c.published_at, c.id) < (${param('cursorAt', '::timestamptz')}, ${param('cursorId', '::uuid')})` : '';
    const limit = param('limit', '::int');
    return [
      `with heads as (`,
      `  select f.followee_id, h.published_at, h.id from community_follows f cross join lateral (`,
      `    select c.id, c.published_at, c.author_visibility from community_posts c where ${listed('c')} and c.author_id = f.followee_id ${cursor}`,
      `    order by c.published_at desc, c.id desc limit 1) h`,
      `  where f.follower_id = ${param('viewer', '::uuid')} and ${notHidden(param, 'f.followee_id')} and h.author_visibility <> 'PRIVATE'`,
      `  order by h.published_at desc, h.id desc limit ${limit}`,
      `), newest as (`,
      `  select k.id, k.published_at from heads cross join lateral (`,
      `    select c.id, c.published_at from community_posts c where ${listed('c')} and c.author_id = heads.followee_id ${cursor}`,
      `    order by c.published_at desc, c.id desc limit ${limit}) k`,
      `  order by k.published_at desc, k.id desc limit ${limit})`,
      `${selectPost(param, true)} from newest join community_posts p on p.id = newest.id ${JOIN_ORIGINAL_AND_SCORE}`,
      `order by p.published_at desc, p.id desc`,
    ].join('\n');
  });

/** The score and like state of these posts (a single post's view): values `ids` and, signed in, `viewer`. */
export const extrasStatement = (signedIn: boolean): NamedStatement =>
  shape(
    `extras:${signedIn}`,
    (param) =>
      `select p.id, ${CURRENT_SCORE} as score, ${likedBy(param, signedIn)} as liked_by_me
     from community_posts p left join community_post_scores s on s.post_id = p.id where p.id = any(${param('ids', '::text[]')}::uuid[])`,
  );

/** A listed post by id: value `id`. */
export const listedPostStatement: NamedStatement = namedStatement(
  (param) => `select ${POST_COLUMNS} from community_posts p where p.id = ${param('id', '::uuid')} and ${listed('p')}`,
);

/** The author and audience of these (remixed) posts: value `ids`. */
export const postAuthorsStatement: NamedStatement = namedStatement(
  (param) => `select p.id, p.author_id, p.author_visibility from community_posts p where p.id = any(${param('ids', '::text[]')}::uuid[])`,
);

export type PostRow = typeof communityPosts.$inferSelect;

/** What a page statement selects besides the post, so a page needs no extra round trip for them. */
export interface PostExtras {
  score: number;
  likedByMe: boolean;
}

/** The author and audience of a remixed original. */
export interface OriginalAuthor {
  authorId: string;
  visibility: AuthorVisibility;
}

/** A row of a page statement as the post row Drizzle would give, with its score, like state and original's author. */
export type PageRow = PostExtras & { post: PostRow; original: OriginalAuthor | null; ordered?: number };

export function toPageRow(raw: Record<string, unknown>): PageRow {
  return {
    post: toPostRow(raw),
    score: Number(raw.score),
    likedByMe: raw.liked_by_me === true,
    original: raw.original_author_id ? { authorId: raw.original_author_id as string, visibility: raw.original_visibility as AuthorVisibility } : null,
    ...(raw.ordered === undefined ? {} : { ordered: Number(raw.ordered) }),
  };
}

/** A row of `POST_COLUMNS` as the post row Drizzle would give. */
export function toPostRow(raw: Record<string, unknown>): PostRow {
  return {
    id: raw.id as string,
    authorId: raw.author_id as string,
    generationId: raw.generation_id as string,
    caption: raw.caption as string,
    tags: raw.tags as string[],
    remixOfPostId: raw.remix_of_post_id as string | null,
    likeCount: raw.like_count as number,
    commentCount: raw.comment_count as number,
    viewCount: raw.view_count as number,
    shareCount: raw.share_count as number,
    remixCount: raw.remix_count as number,
    publishedAt: raw.published_at as Date,
    updatedAt: raw.updated_at as Date,
    deletedAt: raw.deleted_at as Date | null,
    hiddenAt: raw.hidden_at as Date | null,
    authorVisibility: raw.author_visibility as AuthorVisibility,
  };
}
