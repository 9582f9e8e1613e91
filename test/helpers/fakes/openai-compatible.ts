import * as deepseek from '../../../src/modules/gateway/providers/deepseek/deepseek.fake.js';
import * as fireworks from '../../../src/modules/gateway/providers/fireworks/fireworks.fake.js';
import * as google from '../../../src/modules/gateway/providers/google/google.fake.js';
import * as groq from '../../../src/modules/gateway/providers/groq/groq.fake.js';
import * as mistral from '../../../src/modules/gateway/providers/mistral/mistral.fake.js';
import * as ollama from '../../../src/modules/gateway/providers/ollama/ollama.fake.js';
import * as openai from '../../../src/modules/gateway/providers/openai/openai.fake.js';
import * as openrouter from '../../../src/modules/gateway/providers/openrouter/openrouter.fake.js';
import * as perplexity from '../../../src/modules/gateway/providers/perplexity/perplexity.fake.js';
import * as together from '../../../src/modules/gateway/providers/together/together.fake.js';
import * as vllm from '../../../src/modules/gateway/providers/vllm/vllm.fake.js';
import * as xai from '../../../src/modules/gateway/providers/xai/xai.fake.js';
import type { Decide, FakeUpstream } from './text-server.js';
import type { OpenAiDialect } from './text-fake.js';

/**
 * Strict stand-ins for the OpenAI-compatible providers: the chat-completions fake (`chat-completions.ts`) refusing
 * what each real API refuses, with that API's status and error shape, and streaming usage where that API puts it. Each
 * provider's dialect is in its folder (`src/modules/gateway/providers/<slug>/<slug>.fake.ts`). The rules are written
 * from the providers' documents and SDK types (the same sources as the profiles in those folders' `plugin.ts`, encoded
 * separately on purpose: a fake derived from our own profile could not catch a profile bug), and from error bodies the
 * providers were seen to send.
 */
export type { OpenAiDialect };

const FAKES = { openai, google, openrouter, groq, mistral, deepseek, xai, together, fireworks, perplexity, ollama, vllm };

export type Dialect = keyof typeof FAKES;

export const DIALECTS = Object.fromEntries(Object.entries(FAKES).map(([slug, fake]) => [slug, fake.dialect])) as Record<Dialect, OpenAiDialect>;

/** A fake of one provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startFakeProvider = (dialect: Dialect, decide?: Decide): Promise<FakeUpstream> => FAKES[dialect].startTextFake(decide);
