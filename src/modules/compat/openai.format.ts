import type { Static } from 'typebox';
import { badRequest } from '../../platform/http/errors.js';
import {
  imagePartFromUrl,
  type ChatMessage,
  type ContentPart,
  type ResponseFormat,
  type TextAnswerBody,
  type TextBody,
  type ToolChoice,
} from '../gateway/index.js';
import type { ChatCompletion, ChatCompletionBody, ReasoningDetails } from './openai.schemas.js';

export type ChatCompletionRequest = Static<typeof ChatCompletionBody>;
type WireMessage = ChatCompletionRequest['messages'][number];

/**
 * OpenAI parameters this gateway does not carry to any provider: refused with a 400 naming them rather than dropped
 * (`store` and `metadata`, OpenAI's own dashboard features, are harmless and ignored).
 */
const NOT_CARRIED = [
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'audio',
  'modalities',
  'prediction',
  'web_search_options',
  'functions',
  'function_call',
  'service_tier',
];

function refuseUncarried(body: ChatCompletionRequest): void {
  const raw = body as Record<string, unknown>;
  const sent = NOT_CARRIED.filter(
    (key) => raw[key] !== undefined && raw[key] !== null && raw[key] !== false && !(key === 'modalities' && isTextOnly(raw[key])),
  );
  if (sent.length > 0) throw notCarried(sent);
}

/** The 400 for request fields no provider behind this gateway honours, naming each. */
export function notCarried(fields: string[]) {
  const one = fields.length === 1;
  return badRequest(
    `${fields.join(', ')} ${one ? 'is' : 'are'} not supported by this gateway; leave ${one ? 'it' : 'them'} out.`,
    fields.map((field) => ({ field, message: 'is not supported' })),
  );
}

/**
 * The one rule for request fields of OpenAI's surfaces that newer clients send: a field the surface declares is read
 * (carried, or a documented no-op); a declared field no provider here honours is refused with a 400 naming it when its
 * value would change the answer or what is billed (`refused` says when); a field the surface does not know at all is
 * accepted and its name returned, to be answered in `x-storefront-ignored`. An unknown field cannot change the bill:
 * the upstream call is built from declared fields only, and the charge comes from the usage the provider reports.
 */
export function unknownFields(
  raw: Record<string, unknown>,
  declared: Iterable<string>,
  refused: Record<string, (value: unknown) => boolean> = {},
  alsoRefused: string[] = [],
): string[] {
  const known = new Set(declared);
  const sent = [...Object.keys(refused).filter((key) => raw[key] !== undefined && refused[key]!(raw[key])), ...alsoRefused];
  if (sent.length > 0) throw notCarried(sent);
  const unknown = Object.keys(raw).filter((key) => !known.has(key) && !Object.hasOwn(refused, key) && raw[key] !== undefined);
  // Names go in a header: only plain ones, and not too many; the rest are counted.
  const named = unknown.filter((key) => HEADER_SAFE_NAME.test(key)).slice(0, MAX_NAMED_FIELDS);
  return named.length < unknown.length ? [...named, `(${unknown.length - named.length} more)`] : named;
}
const HEADER_SAFE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_NAMED_FIELDS = 20;
const isTextOnly = (value: unknown) => Array.isArray(value) && value.every((m) => m === 'text');

function contentOf(message: WireMessage, index: number, imagesAllowed: boolean): ChatMessage['content'] {
  const content = message.content;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  const parts = content.map((part, p): ContentPart => {
    if (part.type === 'text') return { type: 'text', text: part.text, ...(part.cache_control ? { cacheControl: part.cache_control } : {}) };
    if (!imagesAllowed)
      throw badRequest(`messages[${index}] is a ${message.role} message with an image; images go in user messages.`, [
        { field: `messages.${index}.content`, message: 'image parts belong in user messages' },
      ]);
    return imagePartFromUrl(part.image_url.url, `messages.${index}.content.${p}.image_url.url`, part.image_url.detail);
  });
  // A text-only message stays a plain string, as most providers and the token counter read it fastest (unless a part
  // carries a cache marker, which must stay on its part).
  return parts.every((part) => part.type === 'text' && !part.cacheControl) ? parts.map((part) => (part as { text: string }).text).join('\n') : parts;
}

type ThinkingBlock = NonNullable<ChatMessage['thinking']>[number];
type WireDetail = NonNullable<WireMessage['reasoning_details']>[number];

/** OpenRouter's name for the dialect of Anthropic's thinking blocks (the only provider here that signs them). */
const ANTHROPIC_FORMAT = 'anthropic-claude-v1';
/** Other providers' dialects: their signatures and encrypted data mean nothing to Anthropic, which refuses them. */
const FOREIGN_FORMATS = new Set(['openai-responses-v1', 'azure-openai-responses-v1', 'xai-responses-v1', 'google-gemini-v1']);

/**
 * The `format` of a reasoning detail: a signed or redacted block is Anthropic's; a streamed piece's text comes before
 * its signature, so it is named by the model's vendor, which keeps every piece of an Anthropic block in one format.
 */
export const reasoningFormat = (model: string, signed: boolean): string => (signed || model.startsWith('anthropic/') ? ANTHROPIC_FORMAT : 'unknown');

/** The answer's thinking blocks as OpenRouter's `reasoning_details` (undefined when there are none). */
export function reasoningDetails(answer: TextAnswerBody): Static<typeof ReasoningDetails> | undefined {
  if (!answer.thinking?.length) return undefined;
  return answer.thinking.map((block, index) =>
    block.type === 'redacted_thinking'
      ? { type: 'reasoning.encrypted' as const, data: block.data, format: ANTHROPIC_FORMAT, index }
      : {
          type: 'reasoning.text' as const,
          text: block.thinking,
          ...(block.signature ? { signature: block.signature } : {}),
          format: reasoningFormat(answer.model, block.signature !== ''),
          index,
        },
  );
}

const malformed = (at: number, j: number, why: string) =>
  badRequest(`messages[${at}].reasoning_details[${j}] ${why}. Send the reasoning_details back exactly as the earlier answer gave them.`, [
    { field: `messages.${at}.reasoning_details.${j}`, message: why },
  ]);

/**
 * An assistant message's `reasoning_details` as the thinking blocks sent back to the model. Pieces of one streamed
 * block (same index) are joined; a text without a signature, a summary and another provider's entries are left out,
 * as no provider here takes them back (Anthropic would refuse the whole call).
 */
function thinkingOf(details: WireDetail[], at: number): ThinkingBlock[] {
  const blocks: (ThinkingBlock & { index?: number | null })[] = [];
  details.forEach((detail, j) => {
    if (detail.format && FOREIGN_FORMATS.has(detail.format)) return;
    if (detail.type === 'reasoning.summary') return;
    if (detail.type === 'reasoning.encrypted') {
      if (!detail.data) throw malformed(at, j, 'is a reasoning.encrypted entry without its data');
      blocks.push({ type: 'redacted_thinking', data: detail.data, index: detail.index });
      return;
    }
    if (detail.type !== 'reasoning.text')
      throw malformed(at, j, `has type "${detail.type}"; the types taken are reasoning.text, reasoning.encrypted and reasoning.summary`);
    if (detail.text == null && !detail.signature) throw malformed(at, j, 'is a reasoning.text entry with neither text nor signature');
    const last = blocks.at(-1);
    if (last?.type === 'thinking' && detail.index != null && last.index === detail.index && last.signature === '') {
      last.thinking += detail.text ?? '';
      last.signature = detail.signature ?? '';
      return;
    }
    blocks.push({ type: 'thinking', thinking: detail.text ?? '', signature: detail.signature ?? '', index: detail.index });
  });
  return blocks
    .filter((b) => b.type === 'redacted_thinking' || b.signature !== '')
    .map((b) => (b.type === 'thinking' ? { type: b.type, thinking: b.thinking, signature: b.signature } : { type: b.type, data: b.data }));
}

function toMessage(message: WireMessage, index: number): ChatMessage {
  const role = message.role === 'developer' ? 'system' : message.role;
  const content = contentOf(message, index, role === 'user');
  if (role === 'tool' && !message.tool_call_id) {
    throw badRequest(`messages[${index}] is a tool message without tool_call_id.`, [
      { field: `messages.${index}.tool_call_id`, message: 'is required on tool messages' },
    ]);
  }
  if (message.reasoning_details?.length && role !== 'assistant') {
    throw badRequest(`messages[${index}] carries reasoning_details; only an assistant message can (send them back on the answer they came with).`, [
      { field: `messages.${index}.reasoning_details`, message: 'belongs on assistant messages only' },
    ]);
  }
  const toolCalls =
    role === 'assistant' && message.tool_calls
      ? message.tool_calls.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }))
      : undefined;
  if (content === '' && !toolCalls) throw badRequest(`messages[${index}] has no text.`, [{ field: `messages.${index}.content`, message: 'must not be empty' }]);
  const thinking = message.reasoning_details?.length ? thinkingOf(message.reasoning_details, index) : [];
  return {
    role,
    content,
    ...(toolCalls ? { toolCalls } : {}),
    ...(role === 'tool' ? { toolCallId: message.tool_call_id } : {}),
    ...(thinking.length ? { thinking } : {}),
  };
}

function toolChoiceOf(choice: NonNullable<ChatCompletionRequest['tool_choice']>): ToolChoice {
  return typeof choice === 'string' ? choice : { name: choice.function.name };
}

function responseFormatOf(format: NonNullable<ChatCompletionRequest['response_format']>): ResponseFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const { name, schema, strict, description } = format.json_schema;
  return { type: 'json_schema', name, schema: schema ?? {}, ...(strict == null ? {} : { strict }), ...(description ? { description } : {}) };
}

/**
 * An OpenAI chat request as the gateway's text call: messages as the caller sent them (no server instruction added;
 * `developer` is a system message), tools, tool results, images and the sampling parameters.
 */
export function toTextBody(body: ChatCompletionRequest): TextBody {
  refuseUncarried(body);
  const messages = body.messages.map(toMessage);
  if (!messages.some((m) => m.role === 'user'))
    throw badRequest('messages must include at least one user message.', [{ field: 'messages', message: 'must include a user message' }]);
  const stop = body.stop == null ? undefined : typeof body.stop === 'string' ? [body.stop] : body.stop.length > 0 ? body.stop : undefined;
  return {
    model: body.model,
    messages,
    serverInstruction: false,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    ...(body.tools?.length
      ? {
          tools: body.tools.map(({ function: f, cache_control: cacheControl }) => ({
            name: f.name,
            ...(f.description ? { description: f.description } : {}),
            parameters: f.parameters ?? { type: 'object', properties: {} },
            ...(f.strict == null ? {} : { strict: f.strict }),
            ...(cacheControl ? { cacheControl } : {}),
          })),
        }
      : {}),
    ...(body.tool_choice == null ? {} : { toolChoice: toolChoiceOf(body.tool_choice) }),
    ...(body.parallel_tool_calls == null ? {} : { parallelToolCalls: body.parallel_tool_calls }),
    ...(body.response_format == null ? {} : { responseFormat: responseFormatOf(body.response_format) }),
    ...(body.top_p == null ? {} : { topP: body.top_p }),
    ...(stop ? { stop } : {}),
    ...(body.seed == null ? {} : { seed: body.seed }),
    ...(body.presence_penalty == null ? {} : { presencePenalty: body.presence_penalty }),
    ...(body.frequency_penalty == null ? {} : { frequencyPenalty: body.frequency_penalty }),
    ...(body.user ? { user: body.user } : {}),
    ...(body.reasoning_effort == null ? {} : { reasoning: { effort: body.reasoning_effort }, reasoningField: 'reasoning_effort' }),
    fieldNames: OPENAI_HINT_NAMES,
  };
}

/** What OpenAI's surfaces call the hints the gateway may leave out, for the `x-storefront-ignored` header. */
export const OPENAI_HINT_NAMES = { temperature: 'temperature', topP: 'top_p', topK: 'top_k', user: 'user', parallelToolCalls: 'parallel_tool_calls' };

/** The thinking's text, for the `reasoning_content` field DeepSeek- and OpenRouter-style clients read. */
export const reasoningText = (thinking: TextAnswerBody['thinking']): string =>
  (thinking ?? []).map((block) => (block.type === 'thinking' ? block.thinking : '')).join('');

export const completionId = (requestId: string) => `chatcmpl-${requestId}`;

/**
 * The billed usage in OpenAI's shape: cache hits in `prompt_tokens_details.cached_tokens` (and cache writes, which
 * OpenAI does not have, in OpenRouter's `cache_write_tokens`, and of those the ones written to a 1-hour cache entry,
 * billed at their own price, in `cache_write_1h_tokens`), reasoning in `completion_tokens_details`, each a part of
 * its total and sent only when the provider reported some; `tokens_charged` is this service's extension.
 */
export function openAiUsage(answer: TextAnswerBody) {
  const { inputTokens, outputTokens, cachedInputTokens, cacheWriteTokens, cacheWrite1hTokens, reasoningTokens, creditsConsumed } = answer.usage;
  const writes = cacheWriteTokens ? { cache_write_tokens: cacheWriteTokens, ...(cacheWrite1hTokens ? { cache_write_1h_tokens: cacheWrite1hTokens } : {}) } : {};
  return {
    prompt_tokens: inputTokens,
    completion_tokens: outputTokens,
    total_tokens: inputTokens + outputTokens,
    ...(cachedInputTokens || cacheWriteTokens ? { prompt_tokens_details: { cached_tokens: cachedInputTokens ?? 0, ...writes } } : {}),
    ...(reasoningTokens ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
    tokens_charged: creditsConsumed,
  };
}

export const wireToolCalls = (calls: NonNullable<TextAnswerBody['toolCalls']>) =>
  calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } }));

/**
 * The gateway's answer as OpenAI's `chat.completion`: content null when the model only called tools or only refused,
 * as OpenAI answers; the refusal in `message.refusal` with OpenAI's finish reason (`stop`)
 * (https://platform.openai.com/docs/guides/structured-outputs#refusals). An Anthropic model that stops with `refusal`
 * sends no refusal text (https://docs.claude.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals),
 * so its answer keeps what it wrote as content, `finish_reason: "content_filter"` and `refusal: null`, as LiteLLM and
 * OpenRouter present it: no refusal text is made up, and clients already test content_filter for a provider's block.
 */
export function toChatCompletion(answer: TextAnswerBody, created: number): Static<typeof ChatCompletion> {
  const toolCalls = answer.toolCalls?.length ? wireToolCalls(answer.toolCalls) : undefined;
  const details = reasoningDetails(answer);
  return {
    id: completionId(answer.requestId),
    object: 'chat.completion',
    created,
    model: answer.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: (toolCalls || answer.refusal) && !answer.text ? null : answer.text,
          refusal: answer.refusal ?? null,
          ...(toolCalls ? { tool_calls: toolCalls } : {}),
          ...(reasoningText(answer.thinking) ? { reasoning_content: reasoningText(answer.thinking) } : {}),
          ...(details ? { reasoning_details: details } : {}),
        },
        finish_reason: answer.finishReason ?? 'stop',
        logprobs: null,
      },
    ],
    usage: openAiUsage(answer),
  };
}
