import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../gateway/index.js';

/**
 * OpenAI's request and response shapes for the routes under /openai/v1. Request bodies accept fields the official SDK
 * may send and this service ignores (OpenAI's clients add new optional fields often), but refuse ones it cannot honour.
 */

/** Anthropic's prompt-caching marker, as OpenRouter and LiteLLM accept it in OpenAI requests; passed to providers that take it. */
const CacheControl = Type.Optional(
  Nullable(
    Type.Object(
      { type: Type.Literal('ephemeral'), ttl: Type.Optional(Type.Enum(['5m', '1h'])) },
      { description: "Extension: Anthropic's prompt-caching marker, passed to providers that take it" },
    ),
  ),
);

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String({ maxLength: MAX_MESSAGE_CHARS }), cache_control: CacheControl });
const ImageUrlPart = Type.Object({
  type: Type.Literal('image_url'),
  image_url: Type.Object({
    url: Type.String({ minLength: 1, maxLength: 8_000_000, description: 'https URL, or data:image/...;base64 (PNG, JPEG, GIF or WebP, at most 5 MB)' }),
    detail: Type.Optional(Type.Enum(['auto', 'low', 'high'])),
  }),
});
const ContentParts = Type.Array(Type.Union([TextPart, ImageUrlPart]), { minItems: 1, maxItems: 100 });

const WireToolCall = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }), arguments: Type.String({ maxLength: MAX_MESSAGE_CHARS }) }),
});

/** Thinking text and redacted data can run far past a message's text (a thinking budget goes up to 1M tokens). */
const MAX_THINKING_CHARS = 4_000_000;
const REASONING_TYPES =
  "`reasoning.text` (text, and the signature that lets it go back to the model), `reasoning.encrypted` (a redacted block's data) or `reasoning.summary`";

/**
 * One entry of OpenRouter's `reasoning_details` as a client sends it back: every field it documents is accepted, and
 * the entry is checked by type when the message is read (openai.format.ts), so a malformed one is named in the 400.
 */
const ReasoningDetailIn = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 64, description: REASONING_TYPES }),
  text: Type.Optional(Nullable(Type.String({ maxLength: MAX_THINKING_CHARS }))),
  signature: Type.Optional(Nullable(Type.String({ maxLength: MAX_MESSAGE_CHARS }))),
  data: Type.Optional(Nullable(Type.String({ maxLength: MAX_THINKING_CHARS }))),
  summary: Type.Optional(Nullable(Type.String({ maxLength: MAX_THINKING_CHARS }))),
  id: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  format: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 64,
        description:
          "anthropic-claude-v1 or unknown as this gateway answers; an entry in another provider's format (openai-responses-v1, google-gemini-v1, ...) is left out",
      }),
    ),
  ),
  index: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100_000 }))),
});

export const OpenAiMessage = Type.Object({
  role: Type.Enum(['system', 'developer', 'user', 'assistant', 'tool'], { description: '`developer` is read as `system`' }),
  content: Type.Optional(
    Nullable(Type.Union([Type.String({ maxLength: MAX_MESSAGE_CHARS }), ContentParts], { description: 'Image parts on user messages only' })),
  ),
  name: Type.Optional(Type.String({ maxLength: 64 })),
  tool_calls: Type.Optional(Type.Array(WireToolCall, { minItems: 1, maxItems: 128, description: 'On assistant messages' })),
  tool_call_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'On tool messages: the call answered' })),
  reasoning_details: Type.Optional(
    Nullable(
      Type.Array(ReasoningDetailIn, {
        maxItems: 10_000,
        description:
          "Extension (OpenRouter's): on assistant messages, the reasoning_details of the earlier answer, sent back unchanged so a model that verifies its thinking (Anthropic's, before a tool result) gets it back. Streamed pieces may be sent as they came: consecutive reasoning.text entries with the same index are joined. A reasoning.text without a signature and a reasoning.summary are left out, as no provider takes them back",
      }),
    ),
  ),
});

const TokenLimit = Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000 })));
const Penalty = Type.Optional(Nullable(Type.Number({ minimum: -2, maximum: 2 })));
const JsonSchema = Type.Record(Type.String(), Type.Unknown());

export const ChatCompletionBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'A model id from GET /openai/v1/models' }),
  messages: Type.Array(OpenAiMessage, { minItems: 1, maxItems: MAX_MESSAGES }),
  max_tokens: TokenLimit,
  max_completion_tokens: TokenLimit,
  temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
  top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  stop: Type.Optional(
    Nullable(Type.Union([Type.String({ minLength: 1, maxLength: 500 }), Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 4 })])),
  ),
  seed: Type.Optional(Nullable(Type.Integer())),
  presence_penalty: Penalty,
  frequency_penalty: Penalty,
  user: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
  reasoning_effort: Type.Optional(
    Nullable(
      Type.Union(
        ['none', 'minimal', 'low', 'medium', 'high'].map((e) => Type.Literal(e)),
        {
          description:
            "Sent to reasoning models in their provider's terms (Anthropic's as a thinking budget); a model without a reasoning control answers without it, and the `x-storefront-ignored: reasoning_effort` header says so",
        },
      ),
    ),
  ),
  n: Type.Optional(Nullable(Type.Literal(1, { description: 'Only one choice per call' }))),
  stream: Type.Optional(Nullable(Type.Boolean({ description: 'Answer with chat.completion.chunk events, then `data: [DONE]`' }))),
  stream_options: Type.Optional(Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) }))),
  tools: Type.Optional(
    Type.Array(
      Type.Object({
        type: Type.Literal('function', { description: 'Function tools only (built-in tools are not served)' }),
        function: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
          description: Type.Optional(Type.String({ maxLength: 4_000 })),
          parameters: Type.Optional(JsonSchema),
          strict: Type.Optional(Nullable(Type.Boolean())),
        }),
        cache_control: CacheControl,
      }),
      { maxItems: 128 },
    ),
  ),
  tool_choice: Type.Optional(
    Nullable(
      Type.Union([
        Type.Enum(['auto', 'none', 'required']),
        Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) }) }),
      ]),
    ),
  ),
  parallel_tool_calls: Type.Optional(Nullable(Type.Boolean())),
  response_format: Type.Optional(
    Nullable(
      Type.Union([
        Type.Object({ type: Type.Enum(['text', 'json_object']) }),
        Type.Object({
          type: Type.Literal('json_schema'),
          json_schema: Type.Object({
            name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
            schema: Type.Optional(JsonSchema),
            strict: Type.Optional(Nullable(Type.Boolean())),
            description: Type.Optional(Type.String({ maxLength: 4_000 })),
          }),
        }),
      ]),
    ),
  ),
});

const Usage = Type.Object({
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
  prompt_tokens_details: Type.Optional(
    Type.Object(
      {
        cached_tokens: Type.Integer({ description: 'Of prompt_tokens: read from the prompt cache' }),
        cache_write_tokens: Type.Optional(
          Type.Integer({ description: "Of prompt_tokens: written to the prompt cache (providers that bill writes; OpenRouter's name)" }),
        ),
        cache_write_1h_tokens: Type.Optional(
          Type.Integer({ description: "Extension: of cache_write_tokens, written to a 1-hour cache entry (Anthropic's ttl 1h, billed at its own price)" }),
        ),
      },
      { description: 'Sent when the provider reported cached prompt tokens' },
    ),
  ),
  completion_tokens_details: Type.Optional(
    Type.Object(
      { reasoning_tokens: Type.Integer({ description: 'Of completion_tokens: spent on reasoning' }) },
      { description: 'Sent when the provider reported reasoning tokens' },
    ),
  ),
  tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
});

/**
 * The thinking blocks in OpenRouter's `reasoning_details` shape, in order (`index` is the block's place; streamed
 * pieces of one block share it). Send them back on the assistant message of the next turn, unchanged.
 */
export const ReasoningDetails = Type.Array(
  Type.Union([
    Type.Object({
      type: Type.Literal('reasoning.text'),
      text: Type.String(),
      signature: Type.Optional(Type.String({ description: 'Present when the provider signed the block (it must come back intact)' })),
      format: Type.String({ description: "anthropic-claude-v1, or unknown for a provider's unsigned reasoning text" }),
      index: Type.Integer(),
    }),
    Type.Object({
      type: Type.Literal('reasoning.encrypted'),
      data: Type.String({ description: 'A redacted thinking block, opaque' }),
      format: Type.String(),
      index: Type.Integer(),
    }),
  ]),
  { description: "Extension (OpenRouter's): the model's thinking blocks with their signatures, when its provider returns them" },
);

export const ChatCompletion = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message: Type.Object({
        role: Type.Literal('assistant'),
        content: Nullable(Type.String()),
        refusal: Nullable(Type.String({ description: "The model's refusal in its own words, when its provider sends one (OpenAI's models); null otherwise" })),
        tool_calls: Type.Optional(Type.Array(WireToolCall)),
        reasoning_content: Type.Optional(Type.String({ description: "The model's thinking, when its provider returns it (never part of content)" })),
        reasoning_details: Type.Optional(ReasoningDetails),
      }),
      finish_reason: Type.String(),
      logprobs: Type.Null(),
    }),
  ),
  usage: Usage,
});

export const OpenAiModel = Type.Object({ id: Type.String(), object: Type.Literal('model'), created: Type.Integer(), owned_by: Type.String() });
export const OpenAiModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(OpenAiModel) });
export const ModelIdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const KeyInfo = Type.Object({
  label: Type.String(),
  scopes: Type.Array(Type.String()),
  expiresAt: Nullable(DateTime),
  createdAt: DateTime,
  balance: Type.Object({ tokens: Type.Integer(), credits: Type.Number() }),
  spend: Type.Object({
    today: Type.Object({ tokens: Type.Integer(), requests: Type.Integer() }),
    month: Type.Object({ tokens: Type.Integer(), requests: Type.Integer() }),
  }),
});

export const OpenAiError = Type.Object(
  {
    error: Type.Object({ message: Type.String(), type: Type.String(), code: Nullable(Type.String()), param: Nullable(Type.String()) }),
  },
  { $id: 'OpenAiError', description: "OpenAI's error shape" },
);

/** Error responses of the /openai/v1 routes, in OpenAI's shape (`OpenAiError` is added to the app's shared schemas). */
export const openAiErrors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('OpenAiError')]));

export const ImageGenerationBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'An image model id from GET /openai/v1/models' }),
  prompt: Type.String({ minLength: 1, maxLength: 8_000, pattern: '\\S' }),
  n: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 8 }))),
  size: Type.Optional(
    Nullable(Type.String({ pattern: '^(auto|[0-9]{2,5}x[0-9]{2,5})$', description: 'WIDTHxHEIGHT (snapped to what the model makes) or auto' })),
  ),
  response_format: Type.Optional(Nullable(Type.Enum(['url', 'b64_json']))),
  quality: Type.Optional(
    Nullable(
      Type.Enum(['auto', 'low', 'medium', 'high', 'standard', 'hd'], {
        description:
          "Values come from the model's controls.quality (GPT Image: low, medium, high, auto; DALL-E 3: standard); auto, the default, is taken by every model, any other value the model does not list is a 400",
      }),
    ),
  ),
});

export const ImagesResponse = Type.Object({
  created: Type.Integer(),
  data: Type.Array(Type.Object({ url: Type.Optional(Type.String()), b64_json: Type.Optional(Type.String()) })),
  quality: Type.Optional(Type.String({ description: 'GPT Image models: the quality used (auto resolved to the one the model chose)' })),
  size: Type.Optional(Type.String({ description: 'GPT Image models: the size made' })),
  output_format: Type.Optional(Type.String({ description: 'GPT Image models: png, jpeg or webp' })),
  usage: Type.Object({
    tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
    input_tokens: Type.Optional(Type.Integer({ description: 'GPT Image models: the tokens the images were charged for, as OpenAI reports them' })),
    input_tokens_details: Type.Optional(Type.Object({ text_tokens: Type.Integer(), image_tokens: Type.Integer() })),
    output_tokens: Type.Optional(Type.Integer()),
    total_tokens: Type.Optional(Type.Integer()),
  }),
});

export const SpeechBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'A speech model id from GET /openai/v1/models' }),
  input: Type.String({ minLength: 1, maxLength: 4_096, pattern: '\\S' }),
  voice: Type.String({ minLength: 1, maxLength: 100, description: "One of the model's voices (GET /v1/models lists them)" }),
  response_format: Type.Optional(Nullable(Type.Enum(['wav'], { description: 'The built-in models answer WAV' }))),
  speed: Type.Optional(Nullable(Type.Number({ minimum: 0.25, maximum: 4 }))),
});

/** The audio bytes, in the model's format. */
export const SpeechAudio = Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'The audio file (audio/wav)' });
