import {
  messageText,
  type ChatMessage,
  type ContentPart,
  type TextParameter,
  type TextRequest,
  type TokenUsage,
  type ToolCall,
  type ToolChoice,
} from '../types.js';

/**
 * The gateway's text request in OpenAI's chat-completions wire format (https://platform.openai.com/docs/api-reference/chat
 * /create), and its answers back. Anthropic's `cache_control` markers have no OpenAI counterpart (OpenAI caches prompts
 * on its own) and are left out; `topK` is not an OpenAI parameter, so the adapter does not declare it.
 */
export const OPENAI_PARAMETERS: ReadonlySet<TextParameter> = new Set([
  'tools',
  'toolChoice',
  'parallelToolCalls',
  'responseFormat',
  'topP',
  'stop',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'user',
]);

function wirePart(part: ContentPart): Record<string, unknown> {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const url = part.source.kind === 'base64' ? `data:${part.source.mediaType};base64,${part.source.data}` : part.source.url;
  return { type: 'image_url', image_url: { url, ...(part.detail ? { detail: part.detail } : {}) } };
}

const wireContent = (message: ChatMessage) => (typeof message.content === 'string' ? message.content : message.content.map(wirePart));

export function wireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId ?? '', content: messageText(message) };
    case 'assistant': {
      const text = messageText(message);
      if (!message.toolCalls?.length) return { role: 'assistant', content: text };
      return {
        role: 'assistant',
        content: text || null,
        tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
      };
    }
    case 'system':
      return { role: 'system', content: messageText(message) };
    default:
      return { role: message.role, content: wireContent(message) };
  }
}

const wireToolChoice = (choice: ToolChoice) => (typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } });

/**
 * How one provider takes the optional parameters (profile.ts): the ones it carries for the model (default:
 * every one the request sets) and its own names for OpenAI's fields (Mistral's `random_seed`).
 */
export interface WireRules {
  carried?: ReadonlySet<TextParameter>;
  renames?: Readonly<Record<string, string>>;
}

/** The optional parameters the request sets and the provider carries, under OpenAI's names or the provider's own. */
export function wireOptions(request: TextRequest, rules: WireRules = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const put = (parameter: TextParameter, field: string, value: unknown) => {
    if (value === undefined || (rules.carried && !rules.carried.has(parameter))) return;
    body[rules.renames?.[field] ?? field] = value;
  };
  const tools = request.tools?.length
    ? request.tools.map((tool) => ({
        type: 'function',
        function: {
          name: tool.name,
          ...(tool.description ? { description: tool.description } : {}),
          parameters: tool.parameters,
          ...(tool.strict === undefined ? {} : { strict: tool.strict }),
        },
      }))
    : undefined;
  put('tools', 'tools', tools);
  put('toolChoice', 'tool_choice', request.toolChoice === undefined ? undefined : wireToolChoice(request.toolChoice));
  put('parallelToolCalls', 'parallel_tool_calls', request.parallelToolCalls);
  const format = request.responseFormat;
  put(
    'responseFormat',
    'response_format',
    format &&
      (format.type === 'json_schema'
        ? {
            type: 'json_schema',
            json_schema: {
              name: format.name,
              schema: format.schema,
              ...(format.strict === undefined ? {} : { strict: format.strict }),
              ...(format.description ? { description: format.description } : {}),
            },
          }
        : { type: format.type }),
  );
  put('topP', 'top_p', request.topP);
  // Only providers that declare top_k get it (the gateway leaves it out for the others).
  put('topK', 'top_k', request.topK);
  put('stop', 'stop', request.stop?.length ? request.stop : undefined);
  put('seed', 'seed', request.seed);
  put('presencePenalty', 'presence_penalty', request.presencePenalty);
  put('frequencyPenalty', 'frequency_penalty', request.frequencyPenalty);
  put('user', 'user', request.user);
  // Only models whose catalog entry takes an effort get one (the gateway decides): OpenAI's and xAI's field.
  if (request.reasoning?.effort) body.reasoning_effort = request.reasoning.effort;
  return body;
}

/**
 * The usage fields we read, as OpenAI and the compatible providers name them (their docs as read in November 2026);
 * nothing is validated, so every field is optional.
 * - OpenAI (https://platform.openai.com/docs/api-reference/chat/object; `CompletionUsage` in the `openai` SDK 6.49.0),
 *   xAI (https://docs.x.ai/developers/advanced-api-usage/prompt-caching/usage-and-pricing), Groq
 *   (https://console.groq.com/docs/prompt-caching) and Mistral (https://docs.mistral.ai/studio-api/conversations/advanced
 *   /prompt-caching): cache hits in `prompt_tokens_details.cached_tokens`, reasoning in
 *   `completion_tokens_details.reasoning_tokens`, both parts of the totals.
 * - OpenRouter (https://openrouter.ai/docs/use-cases/usage-accounting): also `prompt_tokens_details.cache_write_tokens`,
 *   a part of `prompt_tokens`.
 * - DeepSeek (https://api-docs.deepseek.com/guides/kv_cache): `prompt_cache_hit_tokens` and `prompt_cache_miss_tokens`,
 *   which sum to `prompt_tokens`.
 * - Perplexity (https://docs.perplexity.ai/getting-started/pricing and the API reference's `UsageInfo`):
 *   `reasoning_tokens` and `citation_tokens` beside `prompt_tokens + completion_tokens`, billed on their own, so they
 *   are added to the totals.
 * - Google's OpenAI compatibility (generativelanguage.googleapis.com/v1beta/openai) counts a thinking model's thoughts
 *   in `total_tokens` but not in `completion_tokens` (seen in github.com/openai/openai-python/issues/2544: 1,469
 *   prompt + 744 completion, 2,496 total); Google bills thoughts as output, so a total above prompt + completion is
 *   added to the output as reasoning.
 * Audio tokens (`*_tokens_details.audio_tokens`) stay in the totals at the fresh price: the catalog has no audio class.
 */
export interface WireUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  total_tokens?: unknown;
  prompt_tokens_details?: { cached_tokens?: unknown; cache_write_tokens?: unknown } | null;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
  prompt_cache_hit_tokens?: unknown;
  reasoning_tokens?: unknown;
  citation_tokens?: unknown;
}
interface WireToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}
/**
 * `refusal`: the model's refusal in its own words, apart from `content` (null then) and with `finish_reason: "stop"`;
 * streamed as `delta.refusal` pieces (https://platform.openai.com/docs/guides/structured-outputs#refusals, and the chat
 * object and chunk references). A message may carry both.
 */
export interface WireCompletion {
  choices?: {
    message?: { content?: string | null; refusal?: string | null; reasoning_content?: string | null; tool_calls?: WireToolCall[] | null };
    finish_reason?: string | null;
  }[];
  usage?: WireUsage | null;
}
export interface WireChunk {
  choices?: {
    index?: number;
    delta?: { content?: string | null; refusal?: string | null; reasoning_content?: string | null; tool_calls?: WireToolCall[] | null };
    finish_reason?: string | null;
  }[];
  usage?: WireUsage | null;
}

/** A count the provider sent, or 0 for anything that is not a non-negative number. */
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

export function toUsage(usage: WireUsage | null | undefined): TokenUsage | null {
  if (!usage || typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number') return null;
  const prompt = count(usage.prompt_tokens);
  const completion = count(usage.completion_tokens);
  // Thoughts counted in the total only (Google); the detailed reasoning, where also sent, names the same tokens.
  const uncounted = Math.max(0, count(usage.total_tokens) - prompt - completion);
  const detailedReasoning = Math.max(count(usage.completion_tokens_details?.reasoning_tokens), uncounted);
  // Perplexity's counts beside the totals (a detailed count, where sent, is a part of the total instead).
  const separateReasoning = detailedReasoning > 0 ? 0 : count(usage.reasoning_tokens);
  const inputTokens = prompt + count(usage.citation_tokens);
  const outputTokens = completion + uncounted + separateReasoning;
  // DeepSeek sends both its own field and (lately) OpenAI's; they agree, and either alone is the hit count.
  const cached = Math.min(inputTokens, Math.max(count(usage.prompt_tokens_details?.cached_tokens), count(usage.prompt_cache_hit_tokens)));
  const written = Math.min(inputTokens - cached, count(usage.prompt_tokens_details?.cache_write_tokens));
  const reasoning = Math.min(outputTokens, detailedReasoning + separateReasoning);
  return {
    inputTokens,
    outputTokens,
    ...(cached > 0 ? { cachedInputTokens: cached } : {}),
    ...(written > 0 ? { cacheWriteTokens: written } : {}),
    ...(reasoning > 0 ? { reasoningTokens: reasoning } : {}),
  };
}

export function toToolCalls(calls: WireToolCall[] | null | undefined): ToolCall[] | undefined {
  if (!Array.isArray(calls) || calls.length === 0) return undefined;
  return calls.map((call) => ({ id: call.id ?? '', name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' }));
}

/** Streamed tool-call deltas as the gateway's events (OpenAI sends id and name once, then argument pieces, by index). */
export function* toolCallEvents(calls: WireToolCall[] | null | undefined) {
  for (const call of Array.isArray(calls) ? calls : []) {
    yield {
      type: 'tool_call' as const,
      index: typeof call.index === 'number' ? call.index : 0,
      ...(call.id ? { id: call.id } : {}),
      ...(call.function?.name ? { name: call.function.name } : {}),
      argumentsDelta: call.function?.arguments ?? '',
    };
  }
}
