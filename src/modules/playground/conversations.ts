import { and, eq } from 'drizzle-orm';
import { playgroundConversations, type PlaygroundMessage } from '../../db/schema/playground.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';

export type ConversationRow = typeof playgroundConversations.$inferSelect;

export const MAX_CONVERSATION_MESSAGES = 500;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const toConversationView = (row: ConversationRow) => ({
  id: row.id,
  adminId: row.adminId,
  title: row.title,
  model: row.modelSlug,
  messages: row.messages,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

export type ConversationView = ReturnType<typeof toConversationView>;

/** A title from the first user message when none is given. */
const titleOf = (messages: PlaygroundMessage[]) =>
  messages
    .find((m) => m.role === 'user')
    ?.content.trim()
    .replace(/\s+/g, ' ')
    .slice(0, 80) || 'New conversation';

const tooLong = () =>
  badRequest(`A conversation holds at most ${MAX_CONVERSATION_MESSAGES} messages. Start a new conversation to go on.`, [
    { field: 'messages', message: `at most ${MAX_CONVERSATION_MESSAGES} messages` },
  ]);

/** Saved multi-turn playground conversations; each operator sees and changes only their own. */
export function createPlaygroundConversations(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function own(adminId: string, id: string): Promise<ConversationRow> {
    if (!UUID.test(id)) throw notFound('No such conversation.');
    const [row] = await db
      .select()
      .from(playgroundConversations)
      .where(and(eq(playgroundConversations.id, id), eq(playgroundConversations.adminId, adminId)));
    if (!row) throw notFound('No such conversation.');
    return row;
  }

  return {
    own,

    async create(adminId: string, input: { model: string; title?: string; messages?: PlaygroundMessage[] }): Promise<ConversationView> {
      const messages = input.messages ?? [];
      if (messages.length > MAX_CONVERSATION_MESSAGES) throw tooLong();
      const now = clock.now();
      const [row] = await db
        .insert(playgroundConversations)
        .values({ adminId, modelSlug: input.model, title: input.title?.trim() || titleOf(messages), messages, createdAt: now, updatedAt: now })
        .returning();
      return toConversationView(row!);
    },

    async get(adminId: string, id: string): Promise<ConversationView> {
      return toConversationView(await own(adminId, id));
    },

    /** The operator's conversations, most recently changed first. */
    async list(adminId: string, query: { limit: number; cursor?: string }) {
      const page = await newestFirstPage(db, playgroundConversations, 'updatedAt', eq(playgroundConversations.adminId, adminId), query);
      return { items: page.items.map(toConversationView), nextCursor: page.nextCursor };
    },

    /** The messages a new turn sends: the saved ones and the new user message (400 when the conversation is full). */
    nextMessages(row: ConversationRow, content: string): PlaygroundMessage[] {
      if (row.messages.length + 2 > MAX_CONVERSATION_MESSAGES) throw tooLong();
      return [...row.messages, { role: 'user', content }];
    },

    /**
     * Saves a turn's messages, only over the version the turn started from: a turn that raced another one on the same
     * conversation is refused with 409 rather than losing either.
     */
    async saveTurn(row: ConversationRow, messages: PlaygroundMessage[]): Promise<ConversationView> {
      const [saved] = await db
        .update(playgroundConversations)
        .set({ messages, updatedAt: clock.now() })
        .where(and(eq(playgroundConversations.id, row.id), eq(playgroundConversations.updatedAt, row.updatedAt)))
        .returning();
      if (!saved) throw conflict('The conversation changed while this turn ran (another turn was saved first). Reload it and send the message again.');
      return toConversationView(saved);
    },

    async remove(adminId: string, id: string): Promise<void> {
      const row = await own(adminId, id);
      await db.delete(playgroundConversations).where(eq(playgroundConversations.id, row.id));
    },
  };
}

export type PlaygroundConversations = ReturnType<typeof createPlaygroundConversations>;
