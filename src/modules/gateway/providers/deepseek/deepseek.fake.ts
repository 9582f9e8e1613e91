import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** DeepSeek takes a text or json_object format only (https://api-docs.deepseek.com/api/create-chat-completion); unknown fields pass. */
function refuseDeepSeek(body: any): Refusal {
  if (body.response_format?.type === 'json_schema') {
    return {
      status: 400,
      body: { error: { message: 'This response_format type is unavailable now', type: 'invalid_request_error', param: null, code: 'invalid_request_error' } },
    };
  }
  return null;
}

export const dialect: OpenAiDialect = { refuse: refuseDeepSeek };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
