// A community at scale in plain SQL (generate_series), shared by the feeds bench (a million posts) and the plan guard
// (a hundred thousand): ids are md5-derived uuids, so users, generations, posts and works line up without joins.
/** Where the seed's SQL goes: a pg client or the service's Database. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

export interface CommunityScale {
  posts: number;
  users: number;
  /** Signed-up accounts that each follow `followsPerViewer` authors, block or mute 10 others and like 100 posts. */
  viewerIds: string[];
  followsPerViewer: number;
}

/** Post 1 is the original that one post in a thousand remixes. */
export const REMIXED_POST_SQL = `md5('p' || 1)::uuid`;

const time = async (label: string, run: () => Promise<unknown>, log: (line: string) => void) => {
  const t0 = performance.now();
  await run();
  log(`${label} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
};

/**
 * Users, their public generations, one post every 20 seconds going back in time (1 in 97 deleted, engagement skewed so
 * trending has a real spread, 1 in 1,000 a remix of post 1, 1 in 10 by user 1), each post's score row, a gallery of as
 * many works (half imported, half mirrors of posts), ten follows a user and a like a post, and the viewers' follows,
 * blocks and likes; then ANALYZE.
 */
export async function seedCommunity(client: Queryable, scale: CommunityScale, log: (line: string) => void = () => undefined): Promise<void> {
  const { posts, users } = scale;
  // One post in ten is by user 1 (a prolific author), the rest spread over everyone.
  const author = (i: string) => `md5('u' || case when ${i} % 10 = 0 then 1 else 1 + ${i} % ${users} end)::uuid`;
  await time(
    `users: ${users}`,
    () =>
      client.query(`
        insert into users (id, email, password_hash, name, handle, created_at, updated_at)
        select md5('u' || n)::uuid, 'u' || n || '@scale.example', 'x', 'User ' || n, 'scale_u' || n, now() - interval '400 days', now()
        from generate_series(1, ${users}) n`),
    log,
  );
  await time(
    `generations: ${posts}`,
    () =>
      client.query(`
        insert into generations (id, user_id, kind, prompt, output, visibility, created_at)
        select md5('g' || i)::uuid, ${author('i')}, 'IMAGE', 'prompt ' || i,
               jsonb_build_object('images', jsonb_build_array(jsonb_build_object('url', 'https://cdn.example.com/' || i || '.png', 'mimeType', 'image/png'))),
               'PUBLIC', now() - (i * interval '20 seconds')
        from generate_series(1, ${posts}) i`),
    log,
  );
  await time(
    `posts and their score rows: ${posts} (1 in 97 deleted)`,
    async () => {
      await client.query(`
        insert into community_posts (id, author_id, generation_id, caption, tags, remix_of_post_id, like_count, comment_count, view_count, share_count, remix_count, published_at, updated_at, deleted_at)
        select md5('p' || i)::uuid, ${author('i')}, md5('g' || i)::uuid, 'caption ' || i,
               array['tag' || (i % 50), 'topic' || (i % 7)], case when i % 1000 = 0 then ${REMIXED_POST_SQL} end,
               (random() ^ 4 * 500)::int, (random() ^ 4 * 80)::int, (random() ^ 3 * 5000)::int, (random() ^ 6 * 40)::int, (random() ^ 8 * 10)::int,
               now() - (i * interval '20 seconds'), now(), case when i % 97 = 0 then now() end
        from generate_series(1, ${posts}) i`);
      await client.query(`insert into community_post_scores (post_id, author_id) select id, author_id from community_posts`);
    },
    log,
  );
  await time(
    `gallery works: ${posts}`,
    () =>
      client.query(`
        insert into community_works (id, source, work_id, external_id, post_id, user_id, content_type, resource_url, source_like_count, published_at, updated_at)
        select md5('w' || i)::uuid, case when i % 2 = 0 then 'NATIVE' else 'IMPORTED' end, i,
               case when i % 2 = 1 then 'ext-' || i end, case when i % 2 = 0 then md5('p' || i)::uuid end, case when i % 2 = 0 then ${author('i')} end,
               (array['image', 'video', 'audio'])[1 + i % 3], 'https://cdn.example.com/w' || i, (random() ^ 4 * 900)::int,
               now() - (i * interval '20 seconds'), now()
        from generate_series(1, ${posts}) i`),
    log,
  );
  await time(
    `background follows (10 a user) and likes (one a post)`,
    async () => {
      await client.query(`
        insert into community_follows (follower_id, followee_id)
        select md5('u' || n)::uuid, md5('u' || (1 + (n * 7 + k * 13) % ${users}))::uuid from generate_series(1, ${users}) n, generate_series(1, 10) k
        on conflict do nothing`);
      await client.query(
        `insert into community_post_likes (post_id, user_id) select md5('p' || i)::uuid, md5('u' || (1 + i * 7 % ${users}))::uuid from generate_series(1, ${posts}) i`,
      );
    },
    log,
  );
  await time(
    `follows, blocks and likes of ${scale.viewerIds.length} viewers, analyze`,
    async () => {
      for (const [v, viewer] of scale.viewerIds.entries()) {
        const someone = (k: string) => `md5('u' || (1 + (${k} * 487 + $2 * 31) % ${users}))::uuid`;
        await client.query(
          `insert into community_follows (follower_id, followee_id) select $1, ${someone('k')} from generate_series(1, ${scale.followsPerViewer}) k on conflict do nothing`,
          [viewer, v],
        );
        await client.query(
          `insert into user_blocks (id, user_id, blocked_user_id, kind) select gen_random_uuid(), $1, ${someone('k')}, case when k % 2 = 0 then 'BLOCK' else 'MUTE' end
           from generate_series(${scale.followsPerViewer + 1}, ${scale.followsPerViewer + 10}) k on conflict do nothing`,
          [viewer, v],
        );
        await client.query(
          `insert into community_post_likes (post_id, user_id) select md5('p' || (k * 13 + $2))::uuid, $1 from generate_series(1, 100) k on conflict do nothing`,
          [viewer, v],
        );
      }
      await client.query('analyze');
    },
    log,
  );
}
