import type { Static } from 'typebox';
import type { DescribedError } from '../../platform/http/error-handler.js';
import type { ChatMessage, ContentPart, ReasoningEffort, TextAnswerBody, TextBody, ToolCall, ToolChoice, ToolDefinition } from '../gateway/index.js';
import { contentOf, refuse, toChatMessages } from './anthropic.content.js';
import type { CountTokensBody, Message, MessagesBody } from './anthropic.schemas.js';

/**
 * Anthropic's Messages API (https://docs.claude.com/en/api/messages, streaming in
 * https://docs.claude.com/en/docs/build-with-claude/streaming; shapes as in `@anthropic-ai/sdk` 1.13.0) to and from the
 * gateway's text call.
 */

export type MessagesRequest = Static<typeof MessagesBody>;
const SAMPLING_NAMES = { temperature: 'temperature', topP: 'top_p', topK: 'top_k' };
type Tools = NonNullable<MessagesRequest['tools']>;

/**
 * An Anthropic Messages request as the gateway's text call: `system` first, the conversation as it is (no server
 * instruction), and the parameters under the gateway's names. What cannot be honoured is refused with a 400 naming it;
 * a sampling hint the model cannot take (top_k on OpenAI's, temperature with thinking) is left out and named.
 */
export function toTextBody(body: MessagesRequest): TextBody {
  refuseUnsupported(body);
  const system = systemMessage(body.system);
  const messages = [...(system ? [system] : []), ...toChatMessages(body.messages)];
  if (body.cache_control) markLastText(messages, body.cache_control);
  const tools = toolsOf(body.tools);
  const choice = toolChoiceOf(body.tool_choice, tools);
  const format = body.output_config?.format;
  const budget = thinkingBudgetOf(body);
  const adaptive = adaptiveEffortOf(body);
  return {
    model: body.model,
    messages,
    // Anthropic's max_tokens caps the whole output, thinking included: the gateway fits the budget under it
    // (withinMaxTokens) rather than adding it, so neither the upstream call nor the reservation exceeds it.
    maxTokens: body.max_tokens,
    ...(budget ? { reasoning: { budgetTokens: budget, withinMaxTokens: true }, reasoningField: 'thinking' } : {}),
    ...(adaptive ? { reasoning: { effort: adaptive, withinMaxTokens: true }, reasoningField: 'thinking' } : {}),
    serverInstruction: false,
    // The sampling hints under this surface's names, for the header that says which were left out.
    fieldNames: SAMPLING_NAMES,
    // Left undefined when not sent: the gateway passes on (and checks against the provider) only the ones set.
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    topK: body.top_k ?? undefined,
    stop: body.stop_sequences?.length ? body.stop_sequences : undefined,
    user: body.metadata?.user_id ?? undefined,
    tools,
    toolChoice: choice.toolChoice,
    parallelToolCalls: choice.parallelToolCalls,
    responseFormat: format ? { type: 'json_schema', name: 'output', schema: format.schema as Record<string, unknown> } : undefined,
  };
}

export type CountTokensRequest = Static<typeof CountTokensBody>;

/**
 * A count_tokens request as the text call it counts: the same translation (and refusals) as a message, with an output
 * cap (count_tokens has no max_tokens) that any thinking budget fits under.
 */
export const toCountedBody = (body: CountTokensRequest): TextBody => toTextBody({ ...body, max_tokens: Number.MAX_SAFE_INTEGER });

/** The thinking budget of `thinking: { type: "enabled" }`, checked as Anthropic checks it; null when disabled or absent. */
function thinkingBudgetOf(body: MessagesRequest): number | null {
  if (body.thinking?.type !== 'enabled') return null;
  const budget = body.thinking.budget_tokens;
  if (budget === undefined) refuse('thinking.budget_tokens', 'is required when thinking is enabled (at least 1024).');
  if (budget >= body.max_tokens) refuse('thinking.budget_tokens', `must be less than max_tokens (${body.max_tokens}).`);
  return budget;
}

/**
 * `thinking: { type: "adaptive" }`: the model decides how much to think, at `output_config.effort` (Anthropic's default
 * is high; `max` has no gateway level above high). Sent as the gateway's effort, which a budget model gets as a budget
 * fitted under max_tokens (no thinking when max_tokens cannot hold Anthropic's smallest budget, 1024).
 */
function adaptiveEffortOf(body: MessagesRequest): ReasoningEffort | null {
  const effort = body.output_config?.effort ?? null;
  if (body.thinking?.type !== 'adaptive') {
    if (effort !== null) refuse('output_config.effort', 'is taken with thinking: { "type": "adaptive" } only; leave it out otherwise.');
    return null;
  }
  return effort === null || effort === 'max' ? 'high' : effort;
}

function refuseUnsupported(body: MessagesRequest): void {
  for (const field of ['container', 'mcp_servers'] as const) {
    if (body[field] != null) refuse(field, 'is not supported: this service runs no Anthropic-side tools or context editing. Leave it out.');
  }
  if (body.context_management != null && !changesNothing(body.context_management)) {
    refuse(
      'context_management',
      'is not supported: this service does no context editing. Leave it out (edits that keep everything, clear_thinking_20251015 with keep: "all", are taken).',
    );
  }
}

/** Context edits that edit nothing: Claude Code sends `clear_thinking_20251015` with `keep: "all"` on every call. */
function changesNothing(management: unknown): boolean {
  if (typeof management !== 'object' || management === null || Array.isArray(management)) return false;
  const { edits, ...rest } = management as { edits?: unknown };
  if (Object.keys(rest).length > 0 || (edits !== undefined && !Array.isArray(edits))) return false;
  return ((edits ?? []) as unknown[]).every((edit) => {
    const { type, keep, ...other } = (edit ?? {}) as { type?: unknown; keep?: unknown };
    return type === 'clear_thinking_20251015' && keep === 'all' && Object.keys(other).length === 0;
  });
}

function systemMessage(system: MessagesRequest['system']): ChatMessage | null {
  if (system === undefined || system === '') return null;
  if (typeof system === 'string') return { role: 'system', content: system };
  if (system.length === 0) return null;
  return {
    role: 'system',
    content: contentOf(system.map((b) => ({ type: 'text' as const, text: b.text, ...(b.cache_control ? { cacheControl: b.cache_control } : {}) }))),
  };
}

/** The top-level `cache_control`: Anthropic puts it on the last cacheable block, here the last message's last text. */
function markLastText(messages: ChatMessage[], cacheControl: Record<string, unknown>): void {
  const last = messages.at(-1);
  if (!last) return;
  if (typeof last.content === 'string') {
    if (last.content) last.content = [{ type: 'text', text: last.content, cacheControl }];
    return;
  }
  const parts: ContentPart[] = last.content;
  const index = parts.findLastIndex((part) => part.type === 'text');
  if (index >= 0) parts[index] = { ...(parts[index] as Extract<ContentPart, { type: 'text' }>), cacheControl };
}

function toolsOf(tools: Tools | undefined): ToolDefinition[] | undefined {
  if (!tools?.length) return undefined;
  const names = new Set<string>();
  return tools.map((tool, i) => {
    if (tool.type && tool.type !== 'custom') {
      refuse(
        `tools.${i}`,
        `is Anthropic's server tool "${tool.type}", which this service does not run; define your own tool (name, description, input_schema) and run it yourself.`,
      );
    }
    if (!tool.input_schema) refuse(`tools.${i}.input_schema`, "is required: the JSON schema of the tool's arguments.");
    if (names.has(tool.name)) refuse(`tools.${i}.name`, `repeats the tool name "${tool.name}"; tool names must be unique.`);
    names.add(tool.name);
    return {
      name: tool.name,
      parameters: tool.input_schema,
      ...(tool.description ? { description: tool.description } : {}),
      ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
      ...(tool.cache_control ? { cacheControl: tool.cache_control } : {}),
    };
  });
}

/**
 * `auto` is what the gateway does when tools are given, so it is left out (a provider without tool_choice still
 * answers); `any` is the gateway's `required`; `disable_parallel_tool_use: true` turns parallel calls off.
 */
function toolChoiceOf(choice: MessagesRequest['tool_choice'], tools: ToolDefinition[] | undefined): { toolChoice?: ToolChoice; parallelToolCalls?: boolean } {
  if (!choice) return {};
  const parallel = choice.disable_parallel_tool_use === true && tools ? { parallelToolCalls: false } : {};
  if (choice.type === 'auto') return parallel;
  if (!tools) {
    if (choice.type === 'none') return {};
    refuse('tool_choice', `is "${choice.type}" but the request defines no tools; add them to tools.`);
  }
  if (choice.type === 'none') return { toolChoice: 'none' };
  if (choice.type === 'any') return { toolChoice: 'required', ...parallel };
  if (!choice.name) refuse('tool_choice.name', 'is required when tool_choice.type is "tool".');
  if (!tools.some((tool) => tool.name === choice.name)) refuse('tool_choice.name', `is "${choice.name}", which is not one of the request's tools.`);
  return { toolChoice: { name: choice.name }, ...parallel };
}

export const messageId = (requestId: string) => `msg_${requestId}`;

/** Anthropic's stop reason for the gateway's finish reason. */
export function stopReason(finishReason: string | undefined): string {
  if (finishReason === 'tool_calls') return 'tool_use';
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content_filter') return 'refusal';
  if (finishReason === 'stop_sequence') return 'stop_sequence';
  return 'end_turn';
}

/**
 * The answer's stop reason: `refusal` also for a model that refused in its own words (an OpenAI model's `refusal`,
 * finished with `stop`). Anthropic's refusal adds no message of its own, the content is what the model wrote
 * (https://docs.claude.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals), so the refusal's
 * words go in the text.
 */
export const answerStopReason = (answer: Pick<TextAnswerBody, 'finishReason' | 'refusal'>): string =>
  answer.refusal ? 'refusal' : stopReason(answer.finishReason);

/**
 * The billed usage in Anthropic's shape: `input_tokens` counts what was neither read from nor written to the prompt
 * cache, as Anthropic counts it, with the cache reads and writes beside it (sent only when there were some) and the
 * thinking in `output_tokens_details`; `tokens_charged` is this service's extension. Writes to a 1-hour cache entry
 * (billed at their own price) come with Anthropic's `cache_creation` split by lifetime (SDK `Usage.cache_creation`),
 * sent when there were some.
 */
export function anthropicUsage(answer: TextAnswerBody) {
  const { inputTokens, outputTokens, cachedInputTokens = 0, cacheWriteTokens = 0, cacheWrite1hTokens = 0, reasoningTokens = 0, creditsConsumed } = answer.usage;
  const hour = Math.min(cacheWrite1hTokens, cacheWriteTokens);
  return {
    input_tokens: Math.max(0, inputTokens - cachedInputTokens - cacheWriteTokens),
    ...(cacheWriteTokens ? { cache_creation_input_tokens: cacheWriteTokens } : {}),
    ...(hour ? { cache_creation: { ephemeral_5m_input_tokens: cacheWriteTokens - hour, ephemeral_1h_input_tokens: hour } } : {}),
    ...(cachedInputTokens ? { cache_read_input_tokens: cachedInputTokens } : {}),
    output_tokens: outputTokens,
    ...(reasoningTokens ? { output_tokens_details: { thinking_tokens: reasoningTokens } } : {}),
    tokens_charged: creditsConsumed,
  };
}

/**
 * A tool call as a `tool_use` block. Anthropic's `input` is always an object, so arguments that are not a JSON object
 * (a model's broken JSON) give `input: {}` with the text as written in `raw_input`, rather than failing the answer.
 */
export function toolUseBlock(call: ToolCall) {
  const input = parseObject(call.arguments);
  return { type: 'tool_use' as const, id: call.id, name: call.name, input: input ?? {}, ...(input ? {} : { raw_input: call.arguments }) };
}

function parseObject(text: string): Record<string, unknown> | null {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The answer's blocks: its thinking (intact, signatures included), its text and then its refusal's words as one text
 * block (always one when it called no tool), then its tool calls.
 */
export function toMessage(answer: TextAnswerBody): Static<typeof Message> {
  const calls = answer.toolCalls ?? [];
  const thinking = answer.thinking ?? [];
  const text = answer.text + (answer.refusal ?? '');
  return {
    id: messageId(answer.requestId),
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content: [...thinking, ...(text || calls.length === 0 ? [{ type: 'text' as const, text }] : []), ...calls.map(toolUseBlock)],
    stop_reason: answerStopReason(answer),
    stop_sequence: null,
    usage: anthropicUsage(answer),
  };
}

/**
 * A balance that cannot pay for the call is Anthropic's 402 `billing_error`
 * (https://docs.claude.com/en/api/errors), not our 429: Anthropic's clients retry a 429 (Claude Code up to ten
 * times), and no retry makes a wallet fuller. Plan and key limits stay 429s, which do clear with time.
 */
export const anthropicStatusOf = (error: DescribedError): number =>
  error.code === 'QUOTA_EXCEEDED' && typeof (error.details as { shortfallTokens?: unknown } | null)?.shortfallTokens === 'number' ? 402 : error.status;

/** Anthropic's error type for one of our statuses. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** A gateway error (same status) in Anthropic's shape. */
export const toAnthropicError = (error: DescribedError) => ({
  type: 'error' as const,
  error: { type: anthropicErrorType(error.status), message: error.message },
});
