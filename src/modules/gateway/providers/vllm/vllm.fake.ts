import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import type { OpenAiDialect, StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

// vLLM's OpenAI-compatible server ignores request fields it does not know (it logs "The following fields were
// present in the request but ignored"), so this fake accepts any body, as the server does.
export const dialect: OpenAiDialect = {};

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
