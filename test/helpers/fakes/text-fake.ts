import type { Decide, FakeUpstream, startFakeOpenAi } from '../fake-upstreams.js';

/**
 * What each text provider's strict fake (`src/modules/gateway/providers/<slug>/<slug>.fake.ts`) exports as
 * `startTextFake`, so a test can walk the providers and start each one's fake the same way.
 */
export type StartTextFake = (decide?: Decide) => Promise<FakeUpstream>;

/**
 * What sets an OpenAI-compatible API apart from OpenAI's: `refuse`, the refusal of a chat request's body in the API's
 * own status and error shape, or null when the API takes it; `streamUsage`, usage sent unasked on the finish chunk, at
 * its top level (Mistral, Together...) or in `x_groq` (Groq).
 */
export type OpenAiDialect = NonNullable<Parameters<typeof startFakeOpenAi>[1]>;

/** A dialect's refusal of a request body: the status and body the real API answers, or null when it takes it. */
export type Refusal = { status: number; body: unknown } | null;

/** The body's fields that are not among `known`. */
export const unknownKeys = (body: Record<string, unknown>, known: readonly string[]) => Object.keys(body).filter((key) => !known.includes(key));
