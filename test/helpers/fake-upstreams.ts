import { dialect as openAiDialect } from '../../src/modules/gateway/providers/openai/openai.fake.js';
import { startChatCompletions, type OpenAiDialect } from './fakes/chat-completions.js';
import type { Decide, FakeUpstream } from './fakes/text-server.js';

/**
 * Local stand-ins for real AI providers, speaking their wire formats. `startFakeOpenAi` is OpenAI's chat completions,
 * strict as the real API is (`providers/openai/openai.fake.ts`); the other OpenAI-compatible providers' fakes are
 * `startFakeProvider` in `fakes/openai-compatible.ts`, Anthropic's messages are in its folder
 * (`providers/anthropic/anthropic.fake.ts`).
 */
export * from './fakes/text-server.js';

/**
 * A dialect that takes any request body, for a fake that must stand in for no real API in particular. Every test that
 * passes it says why; a test of a real provider's traffic uses that provider's dialect instead.
 */
export const ACCEPT_ANY: OpenAiDialect = {};

/**
 * OpenAI's chat-completions API (`/v1`): by default it refuses what OpenAI refuses (unknown fields, the parameters its
 * reasoning models do not take); `dialect` puts another provider's refusals and stream usage in their place.
 */
export function startFakeOpenAi(decide: Decide = () => ({ kind: 'ok' }), dialect: OpenAiDialect = openAiDialect): Promise<FakeUpstream> {
  return startChatCompletions(dialect, decide);
}
