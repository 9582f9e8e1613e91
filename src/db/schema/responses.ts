import { index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, tz } from './columns.js';

export const RESPONSE_OWNER_TYPES = ['USER', 'WORKSPACE'] as const;
export type ResponseOwnerType = (typeof RESPONSE_OWNER_TYPES)[number];

/**
 * A response of `POST /openai/v1/responses` kept for 30 days (`store`, on by default), so it can be retrieved and
 * continued with `previous_response_id`. Each row holds its own turn only: the input items it was sent and its answer;
 * a conversation is rebuilt by following `previous_response_id` back (see docs/decisions.md).
 */
export const storedResponses = pgTable(
  'stored_responses',
  {
    /** `resp_...`, derived from the gateway request id, so an Idempotency-Key replay finds the same row. */
    id: text('id').primaryKey(),
    requestId: text('request_id').notNull(),
    /** The workspace when the caller metered against a workspace's subscription, else the user. */
    ownerType: text('owner_type', { enum: RESPONSE_OWNER_TYPES }).notNull(),
    ownerId: uuid('owner_id').notNull(),
    /** Who made the call (the owner may be their workspace). */
    userId: uuid('user_id').notNull(),
    previousResponseId: text('previous_response_id'),
    /** This turn's input items in the Responses wire shape, each with its id (`instructions` are not among them). */
    inputItems: jsonb('input_items').$type<Record<string, unknown>[]>().notNull(),
    /** The response object as answered (its `output` items continue the conversation). */
    response: jsonb('response').$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
    expiresAt: tz('expires_at').notNull(),
  },
  (t) => [index('stored_responses_owner_idx').on(t.ownerType, t.ownerId), index('stored_responses_expiry_idx').on(t.expiresAt)],
);
