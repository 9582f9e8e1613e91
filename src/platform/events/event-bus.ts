import type { Database } from '../db/database.js';

/**
 * Cross-instance notifications over Postgres LISTEN/NOTIFY (PGlite supports it in-process).
 * Payloads are JSON and must stay under Postgres's 8000-byte NOTIFY limit: send ids, not documents.
 */
export interface EventBus {
  publish(channel: string, payload: unknown): Promise<void>;
  /** Subscriptions survive a lost listening connection (it reconnects and subscribes again by itself). */
  subscribe(channel: string, handler: (payload: unknown) => void): Promise<() => Promise<void>>;
  /**
   * Calls `callback` after the listening connection came back from a loss: messages published meanwhile may have been
   * missed, so a subscriber that keeps state fresh by them drops it, and bumps whatever stops a read that started
   * before from storing its answer. Messages published after the call are delivered. Synchronous, in registration
   * order; never called on the embedded database. Returns the function that stops the calls.
   */
  onReconnect(callback: () => void): () => void;
}

export function createEventBus(database: Database): EventBus {
  return {
    async publish(channel, payload) {
      await database.notify(channel, JSON.stringify(payload));
    },
    async subscribe(channel, handler) {
      return database.listen(channel, (raw) => {
        try {
          handler(JSON.parse(raw));
        } catch {
          // a malformed payload from another writer is ignored
        }
      });
    },
    onReconnect: (callback) => database.onListenerReset(callback),
  };
}
