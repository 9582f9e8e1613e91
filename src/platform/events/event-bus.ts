import type { Database } from '../db/database.js';

/**
 * Cross-instance notifications over Postgres LISTEN/NOTIFY (PGlite supports it in-process).
 * Payloads are JSON and must stay under Postgres's 8000-byte NOTIFY limit: send ids, not documents.
 */
export interface EventBus {
  publish(channel: string, payload: unknown): Promise<void>;
  subscribe(channel: string, handler: (payload: unknown) => void): Promise<() => Promise<void>>;
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
  };
}
