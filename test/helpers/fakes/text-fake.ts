import type { Decide, FakeUpstream } from './text-server.js';

export type { OpenAiDialect, Refusal } from './chat-completions.js';

/**
 * What each text provider's strict fake (`src/modules/gateway/providers/<slug>/<slug>.fake.ts`) exports as
 * `startTextFake`, so a test can walk the providers and start each one's fake the same way.
 */
export type StartTextFake = (decide?: Decide) => Promise<FakeUpstream>;

/** The body's fields that are not among `known`. */
export const unknownKeys = (body: Record<string, unknown>, known: readonly string[]) => Object.keys(body).filter((key) => !known.includes(key));
