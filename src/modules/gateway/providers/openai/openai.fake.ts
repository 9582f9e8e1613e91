import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { unknownKeys, type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** OpenAI's chat-completions request fields (`ChatCompletionCreateParamsBase` in the `openai` SDK 6.x). */
const OPENAI_FIELDS = [
  'model',
  'messages',
  'audio',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
];
const openAiError = (message: string, param: string | null, code: string | null): Refusal => ({
  status: 400,
  body: { error: { message, type: 'invalid_request_error', param, code } },
});

/**
 * OpenAI answers an unknown field with "Unrecognized request argument supplied", and its reasoning models refuse the
 * sampling fields (https://platform.openai.com/docs/guides/reasoning), `stop` and `max_tokens`, with the bodies seen in
 * github.com/openai/openai-python/issues/2104, github.com/huggingface/smolagents/issues/1671 and
 * github.com/run-llama/llama_index/issues/20865 (parallel_tool_calls on the o-series).
 */
function refuseOpenAi(body: any): Refusal {
  const unknown = unknownKeys(body, OPENAI_FIELDS)[0];
  if (unknown) return openAiError(`Unrecognized request argument supplied: ${unknown}`, null, null);
  const model = String(body.model);
  if (!/^(o\d|gpt-5)(?!.*-chat)/.test(model)) return null;
  if (body.temperature !== undefined && body.temperature !== 1) {
    return openAiError(
      `Unsupported value: 'temperature' does not support ${body.temperature} with this model. Only the default (1) value is supported.`,
      'temperature',
      'unsupported_value',
    );
  }
  if (body.max_tokens !== undefined)
    return openAiError(
      "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      'max_tokens',
      'unsupported_parameter',
    );
  const refused = ['top_p', 'presence_penalty', 'frequency_penalty', 'stop', 'logprobs', ...(/^o\d/.test(model) ? ['parallel_tool_calls'] : [])];
  const param = refused.find((field) => body[field] !== undefined);
  return param ? openAiError(`Unsupported parameter: '${param}' is not supported with this model.`, param, 'unsupported_parameter') : null;
}

export const dialect: OpenAiDialect = { refuse: refuseOpenAi };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
