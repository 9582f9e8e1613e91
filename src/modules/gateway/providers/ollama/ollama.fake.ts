import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import type { OpenAiDialect, StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

// No refusal of its own is encoded: the fake answers as OpenAI's does.
export const dialect: OpenAiDialect = {};

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
