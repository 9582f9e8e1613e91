import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** Perplexity's `tool_choice` is none, auto or required, and its formats text, json_schema or regex (`ApiChatCompletionsRequest` in its SDK). */
function refusePerplexity(body: any): Refusal {
  const invalid = (message: string): Refusal => ({ status: 400, body: { error: { message, type: 'invalid_parameter', code: 400 } } });
  if (body.tool_choice !== undefined && typeof body.tool_choice !== 'string') return invalid('tool_choice must be one of none, auto, required');
  if (body.response_format && !['text', 'json_schema', 'regex'].includes(body.response_format.type))
    return invalid(`response_format type ${body.response_format.type} is not supported`);
  return null;
}

export const dialect: OpenAiDialect = { refuse: refusePerplexity, streamUsage: 'finish' };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
