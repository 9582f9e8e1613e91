import { Type } from 'typebox';
import { Nullable } from '../../platform/http/schemas.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../gateway/index.js';

/**
 * Anthropic's Messages API shapes for `/anthropic/v1`, after https://docs.claude.com/en/api/messages and the types of
 * `@anthropic-ai/sdk` 1.13.0 (`resources/messages/messages.ts`). Fields the official SDK may add and this service
 * ignores pass; fields it cannot honour are refused with a 400 naming them (see `anthropic.format.ts`).
 *
 * Content blocks are checked by type in code rather than as a schema union: a union's validation errors list every
 * branch, while the caller needs one sentence naming the block (`messages.2.content.0 is a "document" block ...`).
 */

/** Anthropic's own request limit for the Messages API; images travel inline as base64. */
export const MESSAGES_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

const CacheControl = Type.Optional(
  Nullable(
    Type.Object(
      { type: Type.Literal('ephemeral'), ttl: Type.Optional(Type.Enum(['5m', '1h'])) },
      { description: 'Prompt-caching marker, passed to providers that take it' },
    ),
  ),
);

const TextBlock = Type.Object({ type: Type.Literal('text'), text: Type.String({ maxLength: MAX_MESSAGE_CHARS }), cache_control: CacheControl });

const ImageSource = Type.Object(
  {
    type: Type.String({ description: '`base64` (with media_type and data) or `url`' }),
    media_type: Type.Optional(Type.String({ maxLength: 100 })),
    data: Type.Optional(Type.String()),
    url: Type.Optional(Type.String({ maxLength: 8192 })),
  },
  { description: 'An image: PNG, JPEG, GIF or WebP, at most 5 MB, as base64 or an https URL' },
);

/** A block inside a tool_result: text or image. */
const ToolResultPart = Type.Object({
  type: Type.String({ description: '`text` or `image`' }),
  text: Type.Optional(Type.String({ maxLength: MAX_MESSAGE_CHARS })),
  source: Type.Optional(ImageSource),
  cache_control: CacheControl,
});

export const ContentBlock = Type.Object(
  {
    type: Type.String({ description: '`text`, `image`, `tool_use` (assistant) or `tool_result` (user); other types are refused with a 400' }),
    text: Type.Optional(Type.String({ maxLength: MAX_MESSAGE_CHARS, description: 'text' })),
    source: Type.Optional(ImageSource),
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'tool_use: the call id' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'tool_use: the tool called' })),
    input: Type.Optional(Type.Unknown({ description: 'tool_use: the arguments (an object)' })),
    tool_use_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'tool_result: the tool_use it answers' })),
    content: Type.Optional(
      Type.Union([Type.String({ maxLength: MAX_MESSAGE_CHARS }), Type.Array(ToolResultPart, { maxItems: 100 })], { description: 'tool_result: the result' }),
    ),
    is_error: Type.Optional(Type.Boolean({ description: 'tool_result: the call failed' })),
    thinking: Type.Optional(Type.String({ description: 'thinking (assistant): the model’s thinking, as it came' })),
    signature: Type.Optional(Type.String({ description: 'thinking: its signature, as it came' })),
    data: Type.Optional(Type.String({ description: 'redacted_thinking: its data, as it came' })),
    cache_control: CacheControl,
  },
  { description: 'A content block (text, image, tool_use, tool_result, or an assistant’s thinking or redacted_thinking sent back intact)' },
);

const ToolDefinition = Type.Object({
  name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,128}$' }),
  description: Type.Optional(Type.String({ maxLength: MAX_MESSAGE_CHARS })),
  input_schema: Type.Optional(Type.Object({ type: Type.Literal('object') }, { description: 'JSON schema of the arguments' })),
  type: Type.Optional(Nullable(Type.String({ description: '`custom` or left out; server tools (web_search_..., bash_..., ...) are refused' }))),
  strict: Type.Optional(Type.Boolean()),
  cache_control: CacheControl,
});

const NotSupported = (what: string) => Type.Optional(Type.Unknown({ description: `${what}: not supported, refused with a 400` }));

export const MessagesBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'A model id from GET /openai/v1/models' }),
  max_tokens: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  messages: Type.Array(
    Type.Object({
      role: Type.Enum(['user', 'assistant', 'system'], { description: '`system` messages join the system prompt' }),
      content: Type.Union([Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS }), Type.Array(ContentBlock, { minItems: 1, maxItems: 100 })]),
    }),
    { minItems: 1, maxItems: MAX_MESSAGES },
  ),
  system: Type.Optional(Type.Union([Type.String({ maxLength: MAX_MESSAGE_CHARS }), Type.Array(TextBlock, { maxItems: 100 })])),
  temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  top_k: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1000 }))),
  stop_sequences: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1000 }), { maxItems: 16 })),
  stream: Type.Optional(Nullable(Type.Boolean({ description: 'Answer with message_start … message_stop events' }))),
  tools: Type.Optional(Type.Array(ToolDefinition, { maxItems: 128 })),
  tool_choice: Type.Optional(
    Type.Object({
      type: Type.Enum(['auto', 'any', 'tool', 'none']),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'type tool: the tool to call' })),
      disable_parallel_tool_use: Type.Optional(Type.Boolean()),
    }),
  ),
  metadata: Type.Optional(
    Type.Object({ user_id: Type.Optional(Nullable(Type.String({ maxLength: 256, description: 'Passed to the provider as the end user' }))) }),
  ),
  cache_control: CacheControl,
  output_config: Type.Optional(
    Type.Object({
      format: Type.Optional(
        Nullable(Type.Object({ type: Type.Literal('json_schema'), schema: Type.Object({}, { description: 'JSON schema the answer follows' }) })),
      ),
      effort: Type.Optional(
        Nullable(
          Type.Enum(['low', 'medium', 'high', 'max'], {
            description: 'With `thinking: { "type": "adaptive" }` only: how hard it thinks (max is taken as high); refused with a 400 otherwise',
          }),
        ),
      ),
    }),
  ),
  thinking: Type.Optional(
    Type.Object(
      {
        type: Type.Union([Type.Literal('enabled'), Type.Literal('adaptive'), Type.Literal('disabled')]),
        budget_tokens: Type.Optional(Type.Integer({ minimum: 1024 })),
      },
      {
        description:
          'Extended thinking: `{ "type": "enabled", "budget_tokens": >= 1024 }` (less than max_tokens), `{ "type": "adaptive" }` (an effort level: output_config.effort, high by default) or `{ "type": "disabled" }`. As Anthropic counts it, max_tokens includes the thinking: an adaptive budget is fitted under it (no thinking when max_tokens is 1024 or less). With thinking on a Claude model, temperature other than 1, top_k and top_p outside 0.95..1 are left out and a tool_choice forcing a tool is a 400. Other providers get it in their terms (an effort level); a model without reasoning answers without it, and the `x-storefront-ignored: thinking` header says so',
      },
    ),
  ),
  container: NotSupported('Code-execution containers'),
  mcp_servers: NotSupported('MCP servers'),
  context_management: Type.Optional(
    Type.Unknown({
      description:
        'Context management: only edits that change nothing (`clear_thinking_20251015` with `keep: "all"`, what Claude Code sends) are taken; others are refused with a 400',
    }),
  ),
});

/** `POST /v1/messages/count_tokens`: a Messages request without `max_tokens` (and nothing to stream). */
const { max_tokens: _maxTokens, stream: _stream, ...countedProperties } = MessagesBody.properties;
export const CountTokensBody = Type.Object(countedProperties);

export const CountTokensResponse = Type.Object({
  input_tokens: Type.Integer({ description: "The request's system prompt, messages and tools in the gateway's tokenizer: an estimate, nothing is charged" }),
});

const ToolUseBlock = Type.Object({
  type: Type.Literal('tool_use'),
  id: Type.String(),
  name: Type.String(),
  input: Type.Unknown({ description: 'The arguments the model wrote, parsed' }),
  raw_input: Type.Optional(Type.String({ description: "Only when the model's arguments were not a JSON object: its text as written (input is then {})" })),
});

export const Message = Type.Object({
  id: Type.String(),
  type: Type.Literal('message'),
  role: Type.Literal('assistant'),
  model: Type.String(),
  content: Type.Array(
    Type.Union([
      Type.Object({ type: Type.Literal('thinking'), thinking: Type.String(), signature: Type.String() }),
      Type.Object({ type: Type.Literal('redacted_thinking'), data: Type.String() }),
      Type.Object({ type: Type.Literal('text'), text: Type.String() }),
      ToolUseBlock,
    ]),
  ),
  stop_reason: Type.String(),
  stop_sequence: Nullable(Type.String()),
  usage: Type.Object({
    input_tokens: Type.Integer({ description: 'Input tokens neither read from nor written to the prompt cache' }),
    cache_creation_input_tokens: Type.Optional(Type.Integer({ description: 'Input tokens written to the prompt cache (sent when there were some)' })),
    cache_creation: Type.Optional(
      Type.Object(
        { ephemeral_5m_input_tokens: Type.Integer(), ephemeral_1h_input_tokens: Type.Integer() },
        { description: 'cache_creation_input_tokens by cache lifetime (sent when some went to a 1-hour entry, which is billed at its own price)' },
      ),
    ),
    cache_read_input_tokens: Type.Optional(Type.Integer({ description: 'Input tokens read from the prompt cache (sent when there were some)' })),
    output_tokens: Type.Integer(),
    output_tokens_details: Type.Optional(Type.Object({ thinking_tokens: Type.Integer({ description: 'Of output_tokens: spent on thinking' }) })),
    tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
  }),
});

export const AnthropicError = Type.Object(
  { type: Type.Literal('error'), error: Type.Object({ type: Type.String(), message: Type.String() }) },
  { $id: 'AnthropicError', description: "Anthropic's error shape" },
);

export const anthropicErrors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('AnthropicError')]));
