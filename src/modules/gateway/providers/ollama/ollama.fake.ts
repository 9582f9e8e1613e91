import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import type { OpenAiDialect, StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

// Ollama takes a field it does not know and ignores it (github.com/ollama/ollama/blob/main/docs/openai.md lists what
// it honours), so this fake accepts any body, as the server does; the profile refuses those fields instead of losing them.
export const dialect: OpenAiDialect = {};

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
