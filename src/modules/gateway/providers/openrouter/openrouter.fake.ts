import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import type { OpenAiDialect, StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

// OpenRouter always sends usage; stream_options.include_usage "has no effect".
export const dialect: OpenAiDialect = { streamUsage: 'finish' };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
