// Users' data at scale for the list plan guards (test/plans/*lists.test.ts), in plain SQL: one INSERT ... SELECT
// generate_series per table. Row i of a table belongs to the same user in every table seeded with as many rows and the
// same owner share, and is one minute older than row i - 1, so tables line up without joins (the payment of top-up
// order i is payment i). The signed-in owner ($1) holds HEAVY rows of a table a user fills by using the service (a
// heavy user: the one whose plans differ) or LIGHT rows of one a user fills slowly (payments, orders, blocks), spread
// evenly through time; the other rows are spread over the background users. Values cycle with `k` (for the owner's
// rows, the owner's own row number), so every filter of a list holds pages of the owner's rows.
import type { Queryable } from './community-scale.js';

export interface ListsScale {
  /** Background users 1..users (seedUsers makes them; `seededUser(n)` is the id of user n). */
  users: number;
  /** Rows of each large table. */
  rows: number;
  /** The signed-in user who owns a share of every table. */
  ownerId: string;
}

/** The owner's rows in a table they fill by using the service. */
export const HEAVY = 2_000;
/** The owner's rows in a table they fill slowly. */
export const LIGHT = 50;

const TAGS = {
  user: 1,
  generation: 2,
  usage: 3,
  wallet: 4,
  ledger: 5,
  notification: 6,
  post: 7,
  comment: 8,
  job: 9,
  payment: 10,
  order: 11,
  block: 12,
  securityEvent: 13,
  webhook: 14,
  delivery: 15,
  attempt: 16,
  audit: 17,
  report: 18,
  run: 19,
  conversation: 20,
  event: 21,
  apiKey: 22,
  model: 23,
  target: 24,
  postGeneration: 25,
} as const;

/**
 * The seeded id of row `n` (an SQL expression) of a kind: a UUID whose first group names the kind and whose last group
 * is n, so tables refer to each other by row number; the ids come in order (cheaper to insert than random ones).
 */
export const seededId = (kind: keyof typeof TAGS, n: string | number) =>
  `('${TAGS[kind].toString(16).padStart(8, '0')}-0000-7000-8000-' || lpad(to_hex(${n}), 12, '0'))::uuid`;

/** The id of background user n (1-based). */
export const seededUser = (n: string | number) => seededId('user', n);

/** The rows of a table: `i`, its `owner` and its cycle key `k`; the signed-in owner ($1) holds `ownerRows` of them. */
const rowsOf = (s: ListsScale, ownerRows: number, count = s.rows) => {
  const every = Math.floor(count / ownerRows);
  return `(
    select i, case when i % ${every} = 0 then i / ${every} else i end as k,
           case when i % ${every} = 0 then $1::uuid else ${seededUser(`1 + i % ${s.users}`)} end as owner
    from generate_series(1, ${count}) i) r`;
};

/** Row i's time: one minute older per row (100k rows cover 69 days). */
const AGO = `now() - i * interval '1 minute'`;

const pick = (values: readonly string[], key = 'k') => `(array[${values.map((v) => `'${v}'`).join(', ')}])[1 + ${key} % ${values.length}]`;

/** Background users: 1 in 10 named Rahman (a search term), 1 in 200 ADMIN, 1 in 40 SUSPENDED; one account every 20 minutes. */
export async function seedUsers(q: Queryable, s: Pick<ListsScale, 'users'>): Promise<void> {
  await q.query(`
    insert into users (id, email, password_hash, name, handle, role, status, created_at, updated_at)
    select ${seededUser('n')}, 'u' || n || '@' || ${pick(['mail.example', 'corp.example', 'school.example'], 'n')}, 'x',
           case when n % 10 = 0 then 'Rahman ' || n else 'User ' || n end, 'lists_u' || n,
           case when n % 200 = 0 then 'ADMIN' else 'USER' end, case when n % 40 = 0 then 'SUSPENDED' else 'ACTIVE' end,
           now() - n * interval '20 minutes', now()
    from generate_series(1, ${s.users}) n`);
}

export const GENERATION_SEARCH = 'lighthouse';
export const GENERATION_TAG = 'travel';

/** Library items: kinds in turn (TEXT one in four), 1 in 3 favourite, 1 in 5 prompts about a lighthouse, 1 in 2 tagged travel. */
export async function seedGenerations(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into generations (id, user_id, kind, prompt, output, visibility, tags, favorite, created_at)
     select ${seededId('generation', 'i')}, owner, ${pick(['IMAGE', 'VIDEO', 'AUDIO', 'TEXT'])},
            case when k % 5 = 0 then 'a ${GENERATION_SEARCH} at dusk ' || i else 'prompt ' || i end,
            '{"images": [{"url": "https://cdn.example.com/seed.png", "mimeType": "image/png"}]}'::jsonb, 'PRIVATE',
            case when k % 2 = 0 then array['${GENERATION_TAG}', 'tag' || k % 30] else array['tag' || k % 30] end, k % 3 = 0, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

/** The key half of the owner's calls were made with. */
export const OWNER_API_KEY_SQL = seededId('apiKey', 0);

/** Gateway calls: four operations in turn, 1 in 10 FAILED, half made with an API key (each user has one). */
export async function seedUsage(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into usage_records (id, user_id, request_id, operation, status, model_id, api_key_id, input_units, output_units, credits_consumed, latency_ms, created_at)
     select ${seededId('usage', 'i')}, owner, 'req-' || i, ${pick(['text.generate', 'image.generate', 'prompt.enhance', 'video.generate'])},
            case when k % 10 = 0 then 'FAILED' else 'SUCCESS' end, ${seededId('model', 'k % 12')},
            case when k % 2 = 0 then case when owner = $1::uuid then ${OWNER_API_KEY_SQL} else ${seededId('apiKey', `1 + i % ${s.users}`)} end end,
            40 + k % 300, 80 + k % 500, 300 + k % 900, 200 + k % 3000, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

/**
 * A wallet per user, and ledger rows: USAGE and REFUND in turn, one in five a PURCHASE naming payment i (the amounts are
 * not meant to add up to the balances: no list reads them together).
 */
export async function seedLedger(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into wallets (id, owner_type, owner_id) select ${seededId('wallet', 'n')}, 'USER', ${seededUser('n')} from generate_series(1, ${s.users}) n`,
  );
  await q.query(`insert into wallets (id, owner_type, owner_id) values (${seededId('wallet', 0)}, 'USER', $1) on conflict do nothing`, [s.ownerId]);
  await q.query(
    `insert into wallet_ledger (id, wallet_id, kind, amount, payment_id, request_id, idempotency_key, created_at)
     select ${seededId('ledger', 'i')},
            case when owner = $1::uuid then (select id from wallets where owner_type = 'USER' and owner_id = $1) else ${seededId('wallet', `1 + i % ${s.users}`)} end,
            case when k % 5 = 0 then 'PURCHASE' when k % 2 = 0 then 'USAGE' else 'REFUND' end,
            case when k % 5 = 0 then 100000 when k % 2 = 0 then -300 else 30 end,
            case when k % 5 = 0 then ${seededId('payment', 'i')} end, case when k % 5 <> 0 then 'req-' || i end, 'seed-' || i, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

/** The inbox: four types in turn, every other one read. */
export async function seedNotifications(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into notifications (id, user_id, type, title, body, read_at, created_at)
     select ${seededId('notification', 'i')}, owner, ${pick(['JOB_SUCCEEDED', 'POST_LIKED', 'NEW_FOLLOWER', 'QUOTA_WARNING'])}, 'Notice ' || i,
            'Something happened', case when k % 2 = 1 then ${AGO} + interval '5 minutes' end, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

/** Image and video jobs, mostly SUCCEEDED (1 in 10 FAILED, 1 in 20 CANCELED). */
export async function seedJobs(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into jobs (id, user_id, kind, status, model_id, model_slug, request_id, input, progress, created_at, updated_at)
     select ${seededId('job', 'i')}, owner, ${pick(['IMAGE', 'VIDEO', 'LIP_SYNC', 'VIDEO_EXTEND'])},
            case when k % 10 = 0 then 'FAILED' when k % 20 = 1 then 'CANCELED' else 'SUCCEEDED' end,
            ${seededId('model', 'k % 12')}, 'local/video', 'job-' || i, '{"prompt": "a prompt"}'::jsonb, 1, ${AGO}, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

export const PAYMENT_CHANNELS = ['card_global', 'wallet_global', 'card_regional', 'wallet_regional_1', 'wallet_regional_2', 'dcb'] as const;

/**
 * `rows` payments (the owner's: LIGHT) and as many top-up orders, order i paid by payment i: a third SUCCEEDED, a third
 * FAILED, a third PENDING, over the six channels.
 */
export async function seedPaymentsAndOrders(q: Queryable, s: ListsScale, rows = s.rows): Promise<void> {
  const amount = '20000 + k % 50 * 100';
  await q.query(
    `insert into payments (id, user_id, purpose_kind, purpose_ref, purpose, channel, mode, status, fulfilment, amount_cents, currency, description,
                           paid_amount_cents, paid_at, expires_at, created_at, updated_at)
     select ${seededId('payment', 'i')}, owner, 'topup', ${seededId('order', 'i')}::text, jsonb_build_object('kind', 'topup', 'orderId', ${seededId('order', 'i')}),
            ${pick(PAYMENT_CHANNELS)}, 'sandbox', case when k % 3 = 0 then 'SUCCEEDED' when k % 3 = 1 then 'FAILED' else 'PENDING' end,
            case when k % 3 = 0 then 'FULFILLED' else 'NONE' end, ${amount}, 'BDT', 'Top-up',
            case when k % 3 = 0 then ${amount} end, case when k % 3 = 0 then ${AGO} end, ${AGO} + interval '30 minutes', ${AGO}, ${AGO}
     from ${rowsOf(s, LIGHT, rows)}`,
    [s.ownerId],
  );
  await q.query(
    `insert into topup_orders (id, user_id, selection, lines, applied_rules, subtotal_cents, discount_cents, amount_cents, currency, tokens, bonus_tokens,
                               total_tokens, channel, payment_id, tokens_granted, granted_at, created_at)
     select ${seededId('order', 'i')}, owner, '{"credits": 200}'::jsonb, '[]'::jsonb, '[]'::jsonb, ${amount}, 0, ${amount}, 'BDT', 2000000, 0, 2000000,
            ${pick(PAYMENT_CHANNELS)}, ${seededId('payment', 'i')}, case when k % 3 = 0 then 2000000 else 0 end, case when k % 3 = 0 then ${AGO} end, ${AGO}
     from ${rowsOf(s, LIGHT, rows)}`,
    [s.ownerId],
  );
}

/** The users the owner blocks or mutes: 1000 and up (so users below 1000 stay visible to them). */
const OWNER_BLOCKS_FROM = 1000;

/** Blocks and mutes (five a user on average). */
export async function seedBlocks(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into user_blocks (id, user_id, blocked_user_id, kind, created_at)
     select ${seededId('block', 'i')}, owner,
            case when owner = $1::uuid then ${seededUser(`${OWNER_BLOCKS_FROM} + k`)} else ${seededUser(`1 + (i * 7 + i / ${s.users}) % ${s.users}`)} end,
            case when k % 2 = 0 then 'BLOCK' else 'MUTE' end, ${AGO}
     from ${rowsOf(s, LIGHT)}
     on conflict do nothing`,
    [s.ownerId],
  );
}

/** Sign-ins, failed sign-ins and sign-outs. */
export async function seedSecurityEvents(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into security_events (id, user_id, kind, ip_address, user_agent, created_at)
     select ${seededId('securityEvent', 'i')}, owner, ${pick(['LOGIN_SUCCESS', 'LOGIN_FAILED', 'LOGOUT'])}, '203.0.113.' || k % 250, 'Mozilla/5.0', ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

/** The owner's webhook. */
export const OWNER_WEBHOOK_SQL = seededId('webhook', 0);

/** A webhook per user, deliveries (1 in 10 FAILED) and one attempt each. */
export async function seedWebhookDeliveries(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into webhook_endpoints (id, user_id, url, events, secret, created_at, updated_at)
     select ${seededId('webhook', 'n')}, ${seededUser('n')}, 'https://hooks.example.com/' || n, array['*'], 'whsec_seed', now() - interval '100 days', now()
     from generate_series(1, ${s.users}) n
     union all
     select ${OWNER_WEBHOOK_SQL}, $1, 'https://hooks.example.com/owner', array['*'], 'whsec_seed', now() - interval '100 days', now()`,
    [s.ownerId],
  );
  await q.query(
    `insert into webhook_deliveries (id, webhook_id, event_id, event, body, status, attempt_count, last_status_code, created_at, updated_at)
     select ${seededId('delivery', 'i')}, case when owner = $1::uuid then ${OWNER_WEBHOOK_SQL} else ${seededId('webhook', `1 + i % ${s.users}`)} end,
            ${seededId('event', 'i')}, 'job.succeeded', '{"event":"job.succeeded"}', case when k % 10 = 0 then 'FAILED' else 'SUCCEEDED' end, 1,
            case when k % 10 = 0 then 500 else 200 end, ${AGO}, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
  await q.query(
    `insert into webhook_attempts (id, delivery_id, attempt, signed_at, status_code, outcome, duration_ms, created_at)
     select ${seededId('attempt', 'i')}, ${seededId('delivery', 'i')}, 1, ${AGO}, case when i % 10 = 0 then 500 else 200 end,
            case when i % 10 = 0 then 'FAILED' else 'SUCCEEDED' end, 120, ${AGO}
     from generate_series(1, ${s.rows}) i`,
  );
}

/** The post with thousands of comments, by user 2. */
export const THREAD_POST_SQL = seededId('post', 1);

/**
 * `posts` posts, each of a generation of its own (post 1 is the thread), and `s.rows` comments: the thread has
 * `threadComments` top-level comments and as many replies, half of them under its first comment (a viral reply chain)
 * and the rest under the next 99; the other comments are spread over posts 2..posts, one in five a reply.
 */
export async function seedComments(q: Queryable, s: ListsScale & { posts: number; threadComments: number }): Promise<void> {
  if ((s.posts - 1) % 5 === 0) throw new Error('seedComments: posts - 1 must not be a multiple of 5 (replies would answer replies)');
  await q.query(`
    insert into generations (id, user_id, kind, prompt, output, visibility, created_at)
    select ${seededId('postGeneration', 'i')}, ${seededUser(`1 + i % ${s.users}`)}, 'IMAGE', 'prompt ' || i,
           '{"images": [{"url": "https://cdn.example.com/seed.png", "mimeType": "image/png"}]}'::jsonb, 'PUBLIC', now() - i * interval '10 minutes'
    from generate_series(1, ${s.posts}) i`);
  await q.query(`
    insert into community_posts (id, author_id, generation_id, caption, published_at, updated_at)
    select ${seededId('post', 'i')}, ${seededUser(`1 + i % ${s.users}`)}, ${seededId('postGeneration', 'i')}, 'caption ' || i, now() - i * interval '10 minutes', now()
    from generate_series(1, ${s.posts}) i`);
  const thread = s.threadComments;
  // The thread's comments come from a few hundred people, as a busy thread's do. Its authors' profiles are read in one
  // statement bounded by the answer (at most 10,100 comments); were every comment by a different one of the seeded users,
  // reading all of them would be the planner's right choice on a table this small, not on a real one.
  const THREAD_PEOPLE = 400;
  // Comment i past the thread's is on the same post as comment i - (posts - 1), and answers it when i is a multiple
  // of 5 (posts - 1 is not, so the comment answered is a top-level one).
  await q.query(`
    insert into community_comments (id, post_id, author_id, parent_id, body, created_at)
    select ${seededId('comment', 'i')},
           case when i <= ${2 * thread} then ${THREAD_POST_SQL} else ${seededId('post', `2 + i % ${s.posts - 1}`)} end,
           ${seededUser(`case when i <= ${2 * thread} then 1 + i * 13 % ${THREAD_PEOPLE} else 1 + i * 13 % ${s.users} end`)},
           case when i <= ${thread} then null
                when i <= ${2 * thread} then ${seededId('comment', `case when i % 2 = 0 then 1 else 2 + i % 99 end`)}
                when i % 5 = 0 and i - ${s.posts - 1} > ${2 * thread} then ${seededId('comment', `i - ${s.posts - 1}`)} end,
           'comment ' || i,
           case when i <= ${thread} then now() - interval '30 days' + i * interval '1 second'
                when i <= ${2 * thread} then now() - interval '20 days' + i * interval '1 second'
                else ${AGO} end
    from generate_series(1, ${s.rows}) i`);
  await q.query(`
    update community_posts p set comment_count = c.n
    from (select post_id, count(*)::int as n from community_comments group by post_id) c where c.post_id = p.id`);
}

export const AUDIT_ACTIONS = [
  'user.suspend',
  'user.unsuspend',
  'user.role.change',
  'model.update',
  'plan.update',
  'payment.refund',
  'report.resolve',
  'topup.rule.update',
  'flag.update',
  'user.grant',
] as const;
/** A user changed 80 times (the target of one audit entry in ten of the user actions). */
export const AUDIT_TARGET_SQL = `${seededUser(7)}::text`;

/** The admin audit trail: the ten actions in turn by twenty operators (the signed-in one, $1, holds HEAVY entries); each of users 1..500 is the target of 80. */
export async function seedAuditLog(q: Queryable, s: ListsScale): Promise<void> {
  const userAction = `i % 10 in (0, 1, 2, 9)`;
  await q.query(
    `insert into admin_audit_log (id, actor_id, actor_role, action, target_type, target_id, before, after, reason, created_at)
     select ${seededId('audit', 'i')}, case when owner = $1::uuid then owner else ${seededUser('1 + i % 20')} end, 'ADMIN', ${pick(AUDIT_ACTIONS, 'i')},
            case when ${userAction} then 'user' else split_part(${pick(AUDIT_ACTIONS, 'i')}, '.', 1) end,
            case when ${userAction} then ${seededUser('1 + i / 10 % 500')}::text else ${seededId('target', 'i % 500')}::text end,
            '{"status": "ACTIVE"}'::jsonb, '{"status": "SUSPENDED"}'::jsonb, 'reason ' || i, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

/** Community reports by the users ($1 holds HEAVY): 1 in 10 OPEN, 1 in 50 REVIEWING, the rest resolved; posts, comments and users in turn. */
export async function seedReports(q: Queryable, s: ListsScale): Promise<void> {
  await q.query(
    `insert into community_reports (id, reporter_id, target_type, target_id, reason, status, created_at, resolved_at)
     select ${seededId('report', 'i')}, owner, ${pick(['POST', 'COMMENT', 'USER'], 'i')}, ${seededId('target', 'i')}, 'spam',
            case when i % 10 = 0 then 'OPEN' when i % 50 = 1 then 'REVIEWING' when i % 2 = 0 then 'ACTIONED' else 'DISMISSED' end, ${AGO},
            case when i % 10 <> 0 and i % 50 <> 1 then ${AGO} + interval '1 hour' end
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
}

export const PLAYGROUND_KINDS = ['TEXT', 'TEXT_STREAM', 'IMAGE', 'AUDIO', 'VIDEO', 'ENHANCE_PROMPT', 'ENHANCE_IMAGE', 'CONVERSATION_TURN'] as const;

/** Playground runs of twenty operators (the signed-in one, $1, holds HEAVY) and their saved conversations (a tenth as many). */
export async function seedPlayground(q: Queryable, s: ListsScale): Promise<void> {
  const operator = `case when owner = $1::uuid then owner else ${seededUser('1 + i % 20')} end`;
  await q.query(
    `insert into playground_runs (id, admin_id, kind, model_slug, status, request_id, prompt, tokens_charged, created_at)
     select ${seededId('run', 'i')}, ${operator}, ${pick(PLAYGROUND_KINDS, 'i')}, 'local/text', case when i % 10 = 0 then 'FAILED' else 'SUCCEEDED' end,
            'pg-req-' || i, 'prompt ' || i, 300, ${AGO}
     from ${rowsOf(s, HEAVY)}`,
    [s.ownerId],
  );
  await q.query(
    `insert into playground_conversations (id, admin_id, title, model_slug, messages, created_at, updated_at)
     select ${seededId('conversation', 'i')}, ${operator}, 'Conversation ' || i, 'local/text', '[{"role": "user", "content": "Hello"}]'::jsonb, ${AGO}, ${AGO}
     from ${rowsOf(s, HEAVY / 10, s.rows / 10)}`,
    [s.ownerId],
  );
}
