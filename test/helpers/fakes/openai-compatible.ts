import { startFakeOpenAi, type Decide, type FakeUpstream } from '../fake-upstreams.js';

/**
 * Strict stand-ins for the OpenAI-compatible providers: `startFakeOpenAi` answering as it does, but refusing what each
 * real API refuses, with that API's status and error shape, and streaming usage where that API puts it. The rules are
 * written from the providers' documents and SDK types (the same sources as src/modules/gateway/providers/profiles.ts,
 * encoded here separately on purpose), and from error bodies the providers were seen to send.
 */
/**
 * `refuse`: the refusal of a chat request's body, or null when the API takes it; `streamUsage`: usage sent unasked on
 * the finish chunk, at its top level (Mistral, Together...) or in `x_groq` (Groq).
 */
export type OpenAiDialect = NonNullable<Parameters<typeof startFakeOpenAi>[1]>;

export type Dialect = 'openai' | 'google' | 'openrouter' | 'groq' | 'mistral' | 'deepseek' | 'xai' | 'together' | 'fireworks' | 'perplexity' | 'ollama' | 'vllm';

type Refusal = { status: number; body: unknown } | null;
const unknownKeys = (body: Record<string, unknown>, known: readonly string[]) => Object.keys(body).filter((key) => !known.includes(key));

// ---------------------------------------------------------------- OpenAI

/** OpenAI's chat-completions request fields (`ChatCompletionCreateParamsBase` in the `openai` SDK 6.x). */
const OPENAI_FIELDS = [
  'model', 'messages', 'audio', 'frequency_penalty', 'logit_bias', 'logprobs', 'max_completion_tokens', 'max_tokens', 'metadata', 'modalities', 'n', 'parallel_tool_calls',
  'prediction', 'presence_penalty', 'prompt_cache_key', 'reasoning_effort', 'response_format', 'safety_identifier', 'seed', 'service_tier', 'stop', 'store', 'stream',
  'stream_options', 'temperature', 'tool_choice', 'tools', 'top_logprobs', 'top_p', 'user', 'verbosity', 'web_search_options',
];
const openAiError = (message: string, param: string | null, code: string | null): Refusal => ({ status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } });

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
    return openAiError(`Unsupported value: 'temperature' does not support ${body.temperature} with this model. Only the default (1) value is supported.`, 'temperature', 'unsupported_value');
  }
  if (body.max_tokens !== undefined) return openAiError("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", 'max_tokens', 'unsupported_parameter');
  const refused = ['top_p', 'presence_penalty', 'frequency_penalty', 'stop', 'logprobs', ...(/^o\d/.test(model) ? ['parallel_tool_calls'] : [])];
  const param = refused.find((field) => body[field] !== undefined);
  return param ? openAiError(`Unsupported parameter: '${param}' is not supported with this model.`, param, 'unsupported_parameter') : null;
}

// ---------------------------------------------------------------- Mistral

/** `ChatCompletionStreamRequest$Outbound` and the message types in @mistralai/mistralai (github.com/mistralai/client-ts). */
const MISTRAL_FIELDS = [
  'model', 'temperature', 'top_p', 'max_tokens', 'stream', 'stop', 'random_seed', 'metadata', 'messages', 'response_format', 'tools', 'tool_choice', 'presence_penalty',
  'frequency_penalty', 'n', 'prediction', 'parallel_tool_calls', 'reasoning_effort', 'prompt_mode', 'guardrails', 'prompt_cache_key', 'safe_prompt',
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
  const extra = (loc: (string | number)[], input: unknown) => ({ type: 'extra_forbidden', loc: ['body', ...loc], msg: 'Extra inputs are not permitted', input });
  const detail = unknownKeys(body, MISTRAL_FIELDS).map((key) => extra([key], body[key]));
  for (const [index, message] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
    for (const key of unknownKeys(message, MISTRAL_MESSAGE_FIELDS[message.role] ?? ['role', 'content'])) detail.push(extra(['messages', index, message.role, key], message[key]));
  }
  if (detail.length === 0) return null;
  return { status: 422, body: { object: 'error', message: { detail }, type: 'invalid_request_error', param: null, code: null } };
}

// ---------------------------------------------------------------- xAI

/** https://docs.x.ai/docs/api-reference#chat-completions. */
const XAI_FIELDS = [
  'model', 'messages', 'deferred', 'frequency_penalty', 'logit_bias', 'logprobs', 'max_completion_tokens', 'max_tokens', 'n', 'parallel_tool_calls', 'presence_penalty',
  'reasoning_effort', 'response_format', 'search_parameters', 'seed', 'stop', 'stream', 'stream_options', 'temperature', 'tool_choice', 'tools', 'top_logprobs', 'top_p', 'user',
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

// ---------------------------------------------------------------- Groq

/** `ChatCompletionCreateParamsBase` in groq-sdk, plus `stream_options`, which the API takes (github.com/Portkey-AI/gateway/issues/1338). */
const GROQ_FIELDS = [
  'messages', 'model', 'citation_options', 'compound_custom', 'disable_tool_validation', 'documents', 'exclude_domains', 'frequency_penalty', 'function_call', 'functions',
  'include_domains', 'include_reasoning', 'logit_bias', 'logprobs', 'max_completion_tokens', 'max_tokens', 'metadata', 'n', 'parallel_tool_calls', 'presence_penalty',
  'reasoning_effort', 'reasoning_format', 'response_format', 'search_settings', 'seed', 'service_tier', 'stop', 'store', 'stream', 'stream_options', 'temperature',
  'tool_choice', 'tools', 'top_logprobs', 'top_p', 'user',
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

// ---------------------------------------------------------------- Google, DeepSeek, Perplexity

/** Google's OpenAI compatibility: a proto-backed endpoint that refuses unknown fields (github.com/Vali-98/ChatterUI/issues/227). */
const GOOGLE_FIELDS = ['model', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'n', 'stream', 'stream_options', 'stop', 'tools', 'tool_choice', 'response_format', 'reasoning_effort', 'extra_body', 'service_tier'];
function refuseGoogle(body: any): Refusal {
  const unknown = unknownKeys(body, GOOGLE_FIELDS);
  if (unknown.length === 0) return null;
  const violations = unknown.map((name) => ({ description: `Invalid JSON payload received. Unknown name "${name}": Cannot find field.` }));
  const message = violations.map((v) => v.description).join('\n');
  return { status: 400, body: [{ error: { code: 400, message, status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations }] } }] };
}

/** DeepSeek takes a text or json_object format only (https://api-docs.deepseek.com/api/create-chat-completion); unknown fields pass. */
function refuseDeepSeek(body: any): Refusal {
  if (body.response_format?.type === 'json_schema') {
    return { status: 400, body: { error: { message: 'This response_format type is unavailable now', type: 'invalid_request_error', param: null, code: 'invalid_request_error' } } };
  }
  return null;
}

/** Perplexity's `tool_choice` is none, auto or required, and its formats text, json_schema or regex (`ApiChatCompletionsRequest` in its SDK). */
function refusePerplexity(body: any): Refusal {
  const invalid = (message: string): Refusal => ({ status: 400, body: { error: { message, type: 'invalid_parameter', code: 400 } } });
  if (body.tool_choice !== undefined && typeof body.tool_choice !== 'string') return invalid('tool_choice must be one of none, auto, required');
  if (body.response_format && !['text', 'json_schema', 'regex'].includes(body.response_format.type)) return invalid(`response_format type ${body.response_format.type} is not supported`);
  return null;
}

export const DIALECTS: Record<Dialect, OpenAiDialect> = {
  openai: { refuse: refuseOpenAi },
  google: { refuse: refuseGoogle },
  // OpenRouter always sends usage; stream_options.include_usage "has no effect".
  openrouter: { streamUsage: 'finish' },
  groq: { refuse: refuseGroq, streamUsage: 'x_groq' },
  mistral: { refuse: refuseMistral, streamUsage: 'finish' },
  deepseek: { refuse: refuseDeepSeek },
  xai: { refuse: refuseXai },
  together: { streamUsage: 'finish' },
  fireworks: {},
  perplexity: { refuse: refusePerplexity, streamUsage: 'finish' },
  ollama: {},
  vllm: {},
};

/** A fake of one provider's chat-completions API (`/v1`), answering as `startFakeOpenAi` does when the request passes. */
export const startFakeProvider = (dialect: Dialect, decide?: Decide): Promise<FakeUpstream> => startFakeOpenAi(decide, DIALECTS[dialect]);
