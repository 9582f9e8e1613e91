import type Anthropic from '@anthropic-ai/sdk';
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';
import { badRequest } from '../../../../platform/http/errors.js';
import {
  UpstreamError,
  messageText,
  type ChatMessage,
  type ContentPart,
  type ResponseFormat,
  type TextRequest,
  type TextResult,
  type ThinkingBlock,
  type TokenUsage,
  type ToolCall,
  type ToolDefinition,
} from '../types.js';

/**
 * The gateway's text request in Anthropic's Messages API wire format (`anthropic-version: 2023-06-01`), and the answer
 * back. Built from https://platform.claude.com/docs/en/api/messages, .../agents-and-tools/tool-use/handle-tool-calls
 * (tool_result placement), .../build-with-claude/vision (image sources), .../build-with-claude/prompt-caching (usage
 * fields, the 1-hour cache), .../build-with-claude/structured-outputs (`output_config.format`) and
 * .../build-with-claude/streaming, checked against the types of `@anthropic-ai/sdk` 1.13.0 (November 2026).
 */

type Block = Anthropic.ContentBlockParam;
type CacheControl = Anthropic.CacheControlEphemeral;

export const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  refusal: 'content_filter',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
};

export const finishReasonOf = (stopReason: string | null | undefined): string => FINISH[stopReason ?? 'end_turn'] ?? stopReason ?? 'stop';

export type AnthropicSystem = string | Anthropic.TextBlockParam[];

/** Our system messages as Anthropic's `system`: plain text, or text blocks as soon as one part carries a cache marker. */
function toSystem(messages: readonly ChatMessage[]): AnthropicSystem {
  const systems = messages.filter((m) => m.role === 'system');
  for (const message of systems) {
    if (typeof message.content !== 'string' && message.content.some((part) => part.type === 'image')) {
      throw new UpstreamError('bad_request', 'System messages take text only; send images in a user message.', null, 'invalid_system');
    }
  }
  const cached = systems.some((m) => typeof m.content !== 'string' && m.content.some((part) => part.type === 'text' && part.cacheControl));
  if (!cached) return systems.map((m) => messageText(m)).join('\n\n');
  const blocks: Anthropic.TextBlockParam[] = [];
  for (const message of systems) {
    if (typeof message.content === 'string') {
      if (message.content) blocks.push({ type: 'text', text: message.content });
    } else {
      for (const part of message.content) if (part.type === 'text' && part.text) blocks.push(textBlock(part));
    }
  }
  return blocks;
}

function textBlock(part: Extract<ContentPart, { type: 'text' }>): Anthropic.TextBlockParam {
  return { type: 'text', text: part.text, ...(part.cacheControl ? { cache_control: part.cacheControl as unknown as CacheControl } : {}) };
}

function partBlock(part: ContentPart): Anthropic.TextBlockParam | Anthropic.ImageBlockParam {
  if (part.type === 'text') return textBlock(part);
  const source: Anthropic.ImageBlockParam['source'] =
    part.source.kind === 'base64'
      ? { type: 'base64', media_type: part.source.mediaType as Anthropic.Base64ImageSource['media_type'], data: part.source.data }
      : { type: 'url', url: part.source.url };
  return { type: 'image', source };
}

/** The parts as blocks, without empty text (the API refuses empty text blocks). */
const partBlocks = (content: string | ContentPart[]): (Anthropic.TextBlockParam | Anthropic.ImageBlockParam)[] =>
  typeof content === 'string' ? (content ? [{ type: 'text', text: content }] : []) : content.filter((p) => p.type !== 'text' || p.text).map(partBlock);

/** A call's arguments as the `input` object Anthropic wants; refused before any network call when they are not one. */
function toolInput(call: ToolCall): Record<string, unknown> {
  if (call.arguments.trim() === '') return {};
  let input: unknown;
  try {
    input = JSON.parse(call.arguments);
  } catch {
    input = undefined;
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new UpstreamError(
      'bad_request',
      `The arguments of tool call ${call.id} (${call.name}) are not a JSON object; send them as JSON text of an object.`,
      null,
      'invalid_tool_arguments',
    );
  }
  return input as Record<string, unknown>;
}

/** One turn being built: `text` stays set while every message merged into it was plain text. */
interface Turn {
  role: 'user' | 'assistant';
  blocks: Block[];
  text: string | null;
}

function blocksOf(message: ChatMessage, position: number): Block[] {
  if (message.role === 'tool') {
    if (!message.toolCallId)
      throw new UpstreamError(
        'bad_request',
        `messages[${position}] is a tool result without the id of the call it answers; set its toolCallId.`,
        null,
        'invalid_tool_result',
      );
    const content = typeof message.content === 'string' ? message.content : partBlocks(message.content);
    return [{ type: 'tool_result', tool_use_id: message.toolCallId, content, ...(message.isError === undefined ? {} : { is_error: message.isError }) }];
  }
  if (message.role === 'assistant' && typeof message.content !== 'string' && message.content.some((p) => p.type === 'image')) {
    throw new UpstreamError(
      'bad_request',
      `messages[${position}] is an assistant message with an image; only user messages and tool results may carry images.`,
      null,
      'invalid_message',
    );
  }
  // Thinking goes back first and intact (an unsigned one, from another provider, cannot be verified: left out).
  const thinking = (message.role === 'assistant' ? (message.thinking ?? []) : []).filter((b) => b.type === 'redacted_thinking' || b.signature);
  const blocks: Block[] = [...thinking, ...partBlocks(message.content)];
  for (const call of message.toolCalls ?? []) blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: toolInput(call) });
  return blocks;
}

/**
 * System messages go to the `system` field; the others become alternating user/assistant turns (the API wants them
 * alternating): consecutive messages of one role merge, and `tool` results join the user turn, ahead of its other
 * blocks (a user turn answering tool calls must begin with the results). Plain-text turns stay plain strings.
 */
export function toAnthropicMessages(messages: readonly ChatMessage[]): { system: AnthropicSystem; messages: Anthropic.MessageParam[] } {
  const turns: Turn[] = [];
  messages.forEach((message, position) => {
    if (message.role === 'system') return;
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const { content } = message;
    const plain = typeof content === 'string' && message.role !== 'tool' && !message.toolCalls?.length && !message.thinking?.length ? content : null;
    const blocks = blocksOf(message, position);
    let turn = turns[turns.length - 1];
    if (!turn || turn.role !== role) {
      turn = { role, blocks: [], text: plain };
      turns.push(turn);
    } else {
      turn.text = turn.text !== null && plain !== null ? `${turn.text}\n\n${plain}` : null;
    }
    if (message.role === 'tool') {
      const leadingResults = turn.blocks.findIndex((b) => b.type !== 'tool_result');
      turn.blocks.splice(leadingResults === -1 ? turn.blocks.length : leadingResults, 0, ...blocks);
    } else {
      turn.blocks.push(...blocks);
    }
  });
  return { system: toSystem(messages), messages: turns.map((t) => ({ role: t.role, content: t.text ?? t.blocks })) };
}

export function toAnthropicTool(tool: ToolDefinition): Anthropic.Tool {
  return {
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    input_schema: { type: 'object', ...tool.parameters },
    ...(tool.cacheControl ? { cache_control: tool.cacheControl as unknown as CacheControl } : {}),
  };
}

/** `tool_choice`, sent only with tools (the API takes no tool choice without them); parallel calls off rides on it. */
export function toAnthropicToolChoice(request: Pick<TextRequest, 'toolChoice' | 'parallelToolCalls'>): Anthropic.ToolChoice | undefined {
  const single = request.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  const choice = request.toolChoice;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...single };
  if (typeof choice === 'object') return { type: 'tool', name: choice.name, ...single };
  if (choice === 'auto' || request.parallelToolCalls === false) return { type: 'auto', ...single };
  return undefined;
}

/**
 * The answer format as Anthropic's `output_config` (structured outputs; generally available, no beta header). The
 * schema goes through the official SDK's own adaptation to Anthropic's JSON Schema subset
 * (`@anthropic-ai/sdk/lib/transform-json-schema`, what its `jsonSchemaOutputFormat` helper sends): every object gets
 * `additionalProperties: false`, which the API requires, `oneOf` becomes `anyOf`, and constraints the API does not take
 * (minimum, pattern...) move into the description. Like that helper, the root must be an object. Claude has no JSON
 * mode without a schema, and no schema can stand for "any object" (objects must be closed), so `json_object` is refused.
 * These refusals are the caller's 400 naming `responseFormat` (an AppError, which the pool neither retries nor fails
 * over), thrown before any network call: the reservation is refunded whole.
 */
export function toOutputConfig(format: ResponseFormat | undefined): Anthropic.OutputConfig | undefined {
  if (!format || format.type === 'text') return undefined;
  const refuse = (message: string, problem: string) => badRequest(message, [{ field: 'responseFormat', message: problem }]);
  if (format.type === 'json_object') {
    throw refuse(
      'Claude models have no JSON mode without a schema. Send a JSON schema instead (response_format type "json_schema" with an object schema; output_config.format on /anthropic/v1).',
      'json_object is not supported by Claude models; use json_schema',
    );
  }
  if (format.schema.type !== 'object') {
    throw refuse(
      `The answer's JSON schema must describe an object (its root "type" is ${JSON.stringify(format.schema.type ?? null)}); wrap the value in an object property.`,
      'the schema root must be an object',
    );
  }
  let schema: Record<string, unknown>;
  try {
    schema = transformJSONSchema(format.schema);
  } catch (err) {
    throw refuse(
      `The answer's JSON schema cannot be sent to Claude: ${err instanceof Error ? err.message : String(err)}. Give every property a "type" (or anyOf, enum or const).`,
      'every schema node needs a type',
    );
  }
  if (format.description && schema.description === undefined) schema.description = format.description;
  return { format: { type: 'json_schema', schema } };
}

/**
 * The Messages API body of a request (without `stream`). It sends what the request holds: the gateway's prepared call
 * has already left out what Anthropic would refuse (with thinking on: temperature other than 1, top_k, top_p outside
 * 0.95..1; text/capabilities.ts) and refused a forced tool_choice, so nothing is dropped here behind the caller's back.
 */
export function anthropicRequestBody(request: TextRequest): Anthropic.MessageCreateParamsNonStreaming {
  const { system, messages } = toAnthropicMessages(request.messages);
  const tools = request.tools?.length ? request.tools.map(toAnthropicTool) : undefined;
  const toolChoice = tools ? toAnthropicToolChoice(request) : undefined;
  const outputConfig = toOutputConfig(request.responseFormat);
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    messages,
    ...(system.length > 0 ? { system } : {}),
    ...(request.temperature === undefined ? {} : { temperature: Math.min(1, request.temperature) }),
    ...(request.topP === undefined ? {} : { top_p: request.topP }),
    ...(request.topK === undefined ? {} : { top_k: request.topK }),
    ...(request.stop?.length ? { stop_sequences: request.stop } : {}),
    ...(request.user ? { metadata: { user_id: request.user } } : {}),
    ...(tools ? { tools } : {}),
    ...(toolChoice ? { tool_choice: toolChoice } : {}),
    ...(request.reasoning?.budgetTokens ? { thinking: { type: 'enabled' as const, budget_tokens: request.reasoning.budgetTokens } } : {}),
    ...(outputConfig ? { output_config: outputConfig } : {}),
  };
}

/** The usage fields we read, from a whole message or from the stream's message_start and message_delta. */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** The cache writes by the entry's lifetime (SDK `CacheCreation`); message_start carries it, message_delta does not. */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

const count = (value: number | null | undefined): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

/**
 * Anthropic's `input_tokens` leaves out what was written to or read from the prompt cache, so the prompt is all three;
 * the cache reads and writes are its priced classes. `cache_creation_input_tokens` counts every write and
 * `cache_creation` splits it by lifetime: the 1-hour part is its own class (a 1-hour write costs 2x the input price, a
 * 5-minute one 1.25x). `output_tokens` includes the thinking, which `output_tokens_details.thinking_tokens` counts.
 */
export function usageOf(usage: AnthropicUsage): TokenUsage | null {
  if (typeof usage.input_tokens !== 'number' || typeof usage.output_tokens !== 'number') return null;
  const read = count(usage.cache_read_input_tokens);
  const byLifetime = usage.cache_creation;
  const hour = count(byLifetime?.ephemeral_1h_input_tokens);
  const written = Math.max(count(usage.cache_creation_input_tokens), count(byLifetime?.ephemeral_5m_input_tokens) + hour);
  const outputTokens = count(usage.output_tokens);
  const thinking = Math.min(outputTokens, count(usage.output_tokens_details?.thinking_tokens));
  return {
    inputTokens: count(usage.input_tokens) + read + written,
    outputTokens,
    ...(read > 0 ? { cachedInputTokens: read } : {}),
    ...(written > 0 ? { cacheWriteTokens: written } : {}),
    ...(hour > 0 ? { cacheWrite1hTokens: hour } : {}),
    ...(thinking > 0 ? { reasoningTokens: thinking } : {}),
  };
}

export function fromAnthropicMessage(message: Anthropic.Message): TextResult {
  let text = '';
  const toolCalls: ToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) });
    else if (block.type === 'thinking') thinking.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    else if (block.type === 'redacted_thinking') thinking.push({ type: 'redacted_thinking', data: block.data });
  }
  return {
    text,
    ...(toolCalls.length ? { toolCalls } : {}),
    ...(thinking.length ? { thinking } : {}),
    usage: usageOf(message.usage),
    finishReason: finishReasonOf(message.stop_reason),
  };
}
