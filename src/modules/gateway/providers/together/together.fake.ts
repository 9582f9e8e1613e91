import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import type { OpenAiDialect, StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

// Together's chunks carry usage unasked; no refusal of its own is encoded.
export const dialect: OpenAiDialect = { streamUsage: 'finish' };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
