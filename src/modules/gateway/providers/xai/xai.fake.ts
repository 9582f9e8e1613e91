import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { unknownKeys, type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** https://docs.x.ai/docs/api-reference#chat-completions. */
const XAI_FIELDS = [
  'model',
  'messages',
  'deferred',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'n',
  'parallel_tool_calls',
  'presence_penalty',
  'reasoning_effort',
  'response_format',
  'search_parameters',
  'seed',
  'stop',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'web_search_options',
];
const XAI_NAMES: Record<string, string> = { presence_penalty: 'presencePenalty', frequency_penalty: 'frequencyPenalty', stop: 'stop' };
const xaiError = (error: string): Refusal => ({ status: 400, body: { code: 'Client specified an invalid argument', error } });

/**
 * xAI's reasoning models refuse the penalties and stop (https://docs.x.ai/docs/guides/reasoning), its grok-4
 * non-reasoning variants the penalties; the bodies as in github.com/yym68686/uni-api/issues/105 and
 * github.com/miaoxworld/NativeTavern/issues/83.
 */
function refuseXai(body: any): Refusal {
  const unknown = unknownKeys(body, XAI_FIELDS)[0];
  if (unknown) return xaiError(`Argument not supported: ${unknown}`);
  const model = String(body.model);
  const reasoning = /^grok-(3-mini|4|code)/.test(model) && !model.includes('non-reasoning');
  const refused = reasoning ? ['presence_penalty', 'frequency_penalty', 'stop'] : /^grok-4/.test(model) ? ['presence_penalty', 'frequency_penalty'] : [];
  const field = refused.find((name) => body[name] !== undefined);
  return field ? xaiError(`Model ${model} does not support parameter ${XAI_NAMES[field]}.`) : null;
}

export const dialect: OpenAiDialect = { refuse: refuseXai };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
