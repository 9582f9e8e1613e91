import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { unknownKeys, type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** `ChatCompletionCreateParamsBase` in groq-sdk, plus `stream_options`, which the API takes (github.com/Portkey-AI/gateway/issues/1338). */
const GROQ_FIELDS = [
  'messages',
  'model',
  'citation_options',
  'compound_custom',
  'disable_tool_validation',
  'documents',
  'exclude_domains',
  'frequency_penalty',
  'function_call',
  'functions',
  'include_domains',
  'include_reasoning',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'n',
  'parallel_tool_calls',
  'presence_penalty',
  'reasoning_effort',
  'reasoning_format',
  'response_format',
  'search_settings',
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
];
const groqError = (message: string): Refusal => ({ status: 400, body: { error: { message, type: 'invalid_request_error' } } });

/** Groq's refusals (github.com/vercel/ai/pull/1578 for an unknown property; https://console.groq.com/docs/openai for n and logprobs). */
function refuseGroq(body: any): Refusal {
  const unknown = unknownKeys(body, GROQ_FIELDS)[0];
  if (unknown) return groqError(`property '${unknown}' is unsupported`);
  if (body.n !== undefined && body.n !== 1) return groqError("'n' : number must be at most 1");
  if (body.logprobs) return groqError('`logprobs` is not supported with this model');
  return null;
}

export const dialect: OpenAiDialect = { refuse: refuseGroq, streamUsage: 'x_groq' };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
