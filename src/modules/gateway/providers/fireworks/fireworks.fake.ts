import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { unknownKeys, type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** The request fields of https://docs.fireworks.ai/api-reference/post-chatcompletions (no seed, parallel_tool_calls or stream_options). */
const FIREWORKS_FIELDS = [
  'model',
  'messages',
  'tools',
  'tool_choice',
  'max_tokens',
  'max_completion_tokens',
  'prompt_truncate_len',
  'temperature',
  'top_p',
  'top_k',
  'frequency_penalty',
  'perf_metrics_in_response',
  'presence_penalty',
  'repetition_penalty',
  'reasoning_effort',
  'mirostat_lr',
  'mirostat_target',
  'n',
  'ignore_eos',
  'stop',
  'response_format',
  'stream',
  'context_length_exceeded_behavior',
  'logprobs',
  'top_logprobs',
  'echo',
  'min_p',
  'typical_p',
  'logit_bias',
  'user',
];

/**
 * Fireworks refuses a field it does not know with a 400 naming it, as seen for `stream_options`
 * (github.com/FlowiseAI/Flowise/issues/2866) and `vl_high_resolution_images` (github.com/web-infra-dev/midscene/issues/1322).
 * A stream's last chunk carries usage unasked.
 */
function refuseFireworks(body: Record<string, unknown>): Refusal {
  const field = unknownKeys(body, FIREWORKS_FIELDS)[0];
  if (!field) return null;
  const message = `Extra inputs are not permitted, field: '${field}', value: ${JSON.stringify(body[field])}.`;
  return { status: 400, body: { error: { object: 'error', type: 'invalid_request_error', message } } };
}

export const dialect: OpenAiDialect = { refuse: refuseFireworks, streamUsage: 'finish' };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
