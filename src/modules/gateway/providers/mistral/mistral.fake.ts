import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { unknownKeys, type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** `ChatCompletionStreamRequest$Outbound` and the message types in @mistralai/mistralai (github.com/mistralai/client-ts). */
const MISTRAL_FIELDS = [
  'model',
  'temperature',
  'top_p',
  'max_tokens',
  'stream',
  'stop',
  'random_seed',
  'metadata',
  'messages',
  'response_format',
  'tools',
  'tool_choice',
  'presence_penalty',
  'frequency_penalty',
  'n',
  'prediction',
  'parallel_tool_calls',
  'reasoning_effort',
  'prompt_mode',
  'guardrails',
  'prompt_cache_key',
  'safe_prompt',
];
const MISTRAL_MESSAGE_FIELDS: Record<string, string[]> = {
  system: ['role', 'content'],
  user: ['role', 'content'],
  assistant: ['role', 'content', 'tool_calls', 'prefix'],
  tool: ['role', 'content', 'tool_call_id', 'name'],
};

/**
 * Mistral validates with pydantic and forbids extra fields anywhere: 422 with the list of them, as in
 * github.com/openai/openai-agents-python/issues/442 (stream_options) and github.com/Gage-Technologies/mistral-go/issues/3.
 */
function refuseMistral(body: any): Refusal {
  const extra = (loc: (string | number)[], input: unknown) => ({
    type: 'extra_forbidden',
    loc: ['body', ...loc],
    msg: 'Extra inputs are not permitted',
    input,
  });
  const detail = unknownKeys(body, MISTRAL_FIELDS).map((key) => extra([key], body[key]));
  for (const [index, message] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
    for (const key of unknownKeys(message, MISTRAL_MESSAGE_FIELDS[message.role] ?? ['role', 'content']))
      detail.push(extra(['messages', index, message.role, key], message[key]));
  }
  if (detail.length === 0) return null;
  return { status: 422, body: { object: 'error', message: { detail }, type: 'invalid_request_error', param: null, code: null } };
}

export const dialect: OpenAiDialect = { refuse: refuseMistral, streamUsage: 'finish' };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
