import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../gateway/index.js';

/**
 * OpenAI's request and response shapes for the routes under /openai/v1. Request bodies accept fields the official SDK
 * may send and this service ignores (OpenAI's clients add new optional fields often), but refuse ones it cannot honour.
 */

/** Anthropic's prompt-caching marker, as OpenRouter and LiteLLM accept it in OpenAI requests; passed to providers that take it. */
const CacheControl = Type.Optional(
  Nullable(Type.Object({ type: Type.Literal('ephemeral'), ttl: Type.Optional(Type.Enum(['5m', '1h'])) }, { description: "Extension: Anthropic's prompt-caching marker, passed to providers that take it" })),
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

export const OpenAiMessage = Type.Object({
  role: Type.Enum(['system', 'developer', 'user', 'assistant', 'tool'], { description: '`developer` is read as `system`' }),
  content: Type.Optional(Nullable(Type.Union([Type.String({ maxLength: MAX_MESSAGE_CHARS }), ContentParts], { description: 'Image parts on user messages only' }))),
  name: Type.Optional(Type.String({ maxLength: 64 })),
  tool_calls: Type.Optional(Type.Array(WireToolCall, { minItems: 1, maxItems: 128, description: 'On assistant messages' })),
  tool_call_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'On tool messages: the call answered' })),
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
  stop: Type.Optional(Nullable(Type.Union([Type.String({ minLength: 1, maxLength: 500 }), Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 4 })]))),
  seed: Type.Optional(Nullable(Type.Integer())),
  presence_penalty: Penalty,
  frequency_penalty: Penalty,
  user: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
  reasoning_effort: Type.Optional(
    Nullable(
      Type.Union(['none', 'minimal', 'low', 'medium', 'high'].map((e) => Type.Literal(e)), {
        description:
          "Sent to reasoning models in their provider's terms (Anthropic's as a thinking budget); a model without a reasoning control answers without it, and the `x-storefront-ignored: reasoning_effort` header says so",
      }),
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
    Nullable(Type.Union([Type.Enum(['auto', 'none', 'required']), Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) }) })])),
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
        cache_write_tokens: Type.Optional(Type.Integer({ description: "Of prompt_tokens: written to the prompt cache (providers that bill writes; OpenRouter's name)" })),
      },
      { description: 'Sent when the provider reported cached prompt tokens' },
    ),
  ),
  completion_tokens_details: Type.Optional(
    Type.Object({ reasoning_tokens: Type.Integer({ description: 'Of completion_tokens: spent on reasoning' }) }, { description: 'Sent when the provider reported reasoning tokens' }),
  ),
  tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
});

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
        refusal: Type.Null(),
        tool_calls: Type.Optional(Type.Array(WireToolCall)),
        reasoning_content: Type.Optional(Type.String({ description: "The model's thinking, when its provider returns it (never part of content)" })),
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
  size: Type.Optional(Nullable(Type.String({ pattern: '^(auto|[0-9]{2,5}x[0-9]{2,5})$', description: 'WIDTHxHEIGHT (snapped to what the model makes) or auto' }))),
  response_format: Type.Optional(Nullable(Type.Enum(['url', 'b64_json']))),
});

export const ImagesResponse = Type.Object({
  created: Type.Integer(),
  data: Type.Array(Type.Object({ url: Type.Optional(Type.String()), b64_json: Type.Optional(Type.String()) })),
  usage: Type.Object({ tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }) }),
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
