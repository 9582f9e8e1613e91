import { bigint, index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';
import { users } from './auth.js';

export const PLAYGROUND_RUN_KINDS = ['TEXT', 'TEXT_STREAM', 'IMAGE', 'AUDIO', 'VIDEO', 'ENHANCE_PROMPT', 'ENHANCE_IMAGE', 'CONVERSATION_TURN'] as const;
export type PlaygroundRunKind = (typeof PLAYGROUND_RUN_KINDS)[number];
export const PLAYGROUND_RUN_STATUSES = ['SUCCEEDED', 'QUEUED', 'FAILED'] as const;
export type PlaygroundRunStatus = (typeof PLAYGROUND_RUN_STATUSES)[number];

/**
 * One admin playground run: which operator ran what, on which model, and how it ended. The run itself is metered under
 * the internal playground identity (its usage record and generation carry `requestId` / `jobId`); this row is what ties
 * it to the operator, and it feeds the playground's history and per-day analytics.
 */
export const playgroundRuns = pgTable(
  'playground_runs',
  {
    id: idColumn(),
    /** The operator who ran it (not a foreign key: the record outlives a deleted operator account). */
    adminId: uuid('admin_id').notNull(),
    kind: text('kind', { enum: PLAYGROUND_RUN_KINDS }).notNull(),
    modelSlug: text('model_slug').notNull(),
    /** QUEUED: a video job was started (poll it through the playground). */
    status: text('status', { enum: PLAYGROUND_RUN_STATUSES }).notNull(),
    /** The gateway request id (the usage record's and the generation's); null when the gateway refused before metering. */
    requestId: text('request_id'),
    jobId: uuid('job_id'),
    conversationId: uuid('conversation_id'),
    /** The prompt, or the last user message, cut to 500 characters. */
    prompt: text('prompt').notNull(),
    tokensCharged: bigint('tokens_charged', { mode: 'number' }),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    createdAt: createdAt(),
  },
  (t) => [
    index('playground_runs_created_idx').on(t.createdAt, t.id),
    index('playground_runs_admin_idx').on(t.adminId, t.createdAt, t.id),
    index('playground_runs_job_idx').on(t.jobId),
  ],
);

export interface PlaygroundMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A saved multi-turn playground conversation of one operator: its model and its messages so far. */
export const playgroundConversations = pgTable(
  'playground_conversations',
  {
    id: idColumn(),
    adminId: uuid('admin_id')
      .notNull()
      .references(() => users.id),
    title: text('title').notNull(),
    modelSlug: text('model_slug').notNull(),
    messages: jsonb('messages').$type<PlaygroundMessage[]>().notNull(),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [index('playground_conversations_admin_idx').on(t.adminId, t.updatedAt, t.id)],
);
