import { Type } from 'typebox';
import { StrictObject } from '../../../platform/http/schemas.js';
import { ENHANCE_TARGETS } from '../text/instructions.js';

/** Limits of the gateway's own request fields (the spec leaves them open; the 1 MB body limit applies too). */
export const MAX_MESSAGES = 500;
export const MAX_MESSAGE_CHARS = 200_000;
export const MAX_PROMPT_CHARS = 8_000;
/** The body limit of the text routes, which may carry inline images. */
export const TEXT_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

const ModelSlug = Type.String({ minLength: 1, maxLength: 200, description: 'A model slug from GET /v1/models' });

const ToolCallSchema = StrictObject({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  name: Type.String({ minLength: 1, maxLength: 64 }),
  arguments: Type.String({ maxLength: MAX_MESSAGE_CHARS, description: 'The arguments as JSON text, as the model wrote them' }),
});

const TextPartSchema = StrictObject({ type: Type.Literal('text'), text: Type.String({ maxLength: MAX_MESSAGE_CHARS }) });
const ImagePartSchema = StrictObject({
  type: Type.Literal('image'),
  url: Type.String({
    minLength: 1,
    maxLength: 8_000_000,
    description: 'An https URL (the provider fetches it) or a data:image/...;base64 URL (PNG, JPEG, GIF or WebP, at most 5 MB)',
  }),
  detail: Type.Optional(Type.Enum(['auto', 'low', 'high'], { description: "OpenAI's detail level (other providers ignore it)" })),
});

/** Thinking text and redacted data can run far past a message's text (a thinking budget goes up to 1M tokens). */
const MAX_THINKING_CHARS = 4_000_000;

/** A thinking block as the answer's `thinking` gives it, to be sent back unchanged. */
const ThinkingBlockSchema = Type.Union([
  StrictObject({
    type: Type.Literal('thinking'),
    thinking: Type.String({ maxLength: MAX_THINKING_CHARS }),
    signature: Type.String({
      maxLength: MAX_MESSAGE_CHARS,
      description: 'As the answer gave it (a block with an empty signature is left out: no provider takes it back)',
    }),
  }),
  StrictObject({ type: Type.Literal('redacted_thinking'), data: Type.String({ minLength: 1, maxLength: MAX_THINKING_CHARS }) }),
]);

export const ChatMessageSchema = StrictObject({
  role: Type.Enum(['system', 'user', 'assistant', 'tool'], { description: '`tool` (extension): the result of the tool call named by toolCallId' }),
  content: Type.Union([
    Type.String({ maxLength: MAX_MESSAGE_CHARS }),
    Type.Array(Type.Union([TextPartSchema, ImagePartSchema]), {
      minItems: 1,
      maxItems: 100,
      description: 'Extension: text and image parts in order (images need a VISION model)',
    }),
  ]),
  toolCalls: Type.Optional(Type.Array(ToolCallSchema, { minItems: 1, maxItems: 128, description: 'Extension: the tool calls of an earlier assistant answer' })),
  toolCallId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Extension: on a tool message, the call it answers' })),
  thinking: Type.Optional(
    Type.Array(ThinkingBlockSchema, {
      maxItems: 1_000,
      description:
        "Extension: on an assistant message, the `thinking` of the earlier answer, sent back unchanged so a model that verifies its thinking (Anthropic's, before a tool result) gets it back",
    }),
  ),
});

const JsonSchemaObject = Type.Record(Type.String(), Type.Unknown(), { description: 'A JSON schema (object)' });

/** The optional parameters beyond the spec, shared by the text routes (names as in the gateway). */
export const TextExtensions = {
  tools: Type.Optional(
    Type.Array(
      StrictObject({
        name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
        description: Type.Optional(Type.String({ maxLength: 4_000 })),
        parameters: JsonSchemaObject,
        strict: Type.Optional(Type.Boolean()),
      }),
      { maxItems: 128, description: 'Extension: functions the model may call (needs a TOOLS model)' },
    ),
  ),
  toolChoice: Type.Optional(
    Type.Union([Type.Enum(['auto', 'none', 'required']), StrictObject({ name: Type.String({ minLength: 1, maxLength: 64 }) })], {
      description: 'Extension: auto, none, required, or { name } of one tool',
    }),
  ),
  parallelToolCalls: Type.Optional(Type.Boolean({ description: 'Extension: whether the model may call several tools at once' })),
  responseFormat: Type.Optional(
    Type.Union(
      [
        StrictObject({ type: Type.Enum(['text', 'json_object']) }),
        StrictObject({
          type: Type.Literal('json_schema'),
          name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
          schema: JsonSchemaObject,
          strict: Type.Optional(Type.Boolean()),
          description: Type.Optional(Type.String({ maxLength: 4_000 })),
        }),
      ],
      { description: 'Extension: text, a JSON object, or an answer following a JSON schema' },
    ),
  ),
  topP: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'Extension: nucleus sampling' })),
  topK: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, description: "Extension: top-k sampling (Anthropic's models)" })),
  stop: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { minItems: 1, maxItems: 4, description: 'Extension: stop sequences' })),
  seed: Type.Optional(
    Type.Integer({ minimum: -9_007_199_254_740_991, maximum: 9_007_199_254_740_991, description: 'Extension: best-effort deterministic sampling' }),
  ),
  presencePenalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2, description: 'Extension' })),
  frequencyPenalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2, description: 'Extension' })),
  user: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "Extension: your end user's id, passed to the provider for abuse monitoring" })),
  reasoning: Type.Optional(
    StrictObject(
      {
        effort: Type.Optional(Type.Union(['none', 'minimal', 'low', 'medium', 'high'].map((e) => Type.Literal(e)))),
        budgetTokens: Type.Optional(
          Type.Integer({
            minimum: 1024,
            maximum: 1_000_000,
            description: "A thinking budget in tokens (Anthropic's models; an effort model gets the nearest level)",
          }),
        ),
      },
      {
        description:
          "Extension: how hard a reasoning model thinks, sent in its provider's terms (OpenAI-style `reasoning_effort`, Anthropic's thinking budget: minimal 1024, low 2048, medium 8192, high 24576 tokens, added to maxTokens). A model without a reasoning control answers without it, and the `x-storefront-ignored: reasoning` header says so",
      },
    ),
  ),
};

export const TextBody = StrictObject({
  model: ModelSlug,
  messages: Type.Array(ChatMessageSchema, { minItems: 1, maxItems: MAX_MESSAGES }),
  maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Default 2048' })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  stream: Type.Optional(
    Type.Boolean({
      description:
        'Answer with server-sent events: `data: <json>` per event; `text` {type, delta}, `tool_call` {type, index, id?, name?, argumentsDelta} (extension), `thinking` {type, index, delta?, signature?, redactedData?} (extension), `refusal` {type, delta} (extension: a piece of the refusal the model wrote, never part of the text), `usage` {type, usage}, `finish` {type, finishReason}, `error` {type, error: {code, message}}',
    }),
  ),
  ...TextExtensions,
});

export const TextResponse = Type.Object({
  text: Type.String(),
  usage: Type.Object({
    inputTokens: Type.Integer(),
    outputTokens: Type.Integer(),
    creditsConsumed: Type.Integer({ description: 'Tokens charged to the wallet' }),
    cachedInputTokens: Type.Optional(
      Type.Integer({ description: 'Extension: of inputTokens, read from the provider’s prompt cache (billed at the cached price)' }),
    ),
    cacheWriteTokens: Type.Optional(Type.Integer({ description: 'Extension: of inputTokens, written to the provider’s prompt cache' })),
    cacheWrite1hTokens: Type.Optional(
      Type.Integer({ description: "Extension: of cacheWriteTokens, written to a 1-hour cache entry (Anthropic's ttl 1h, billed at the 1-hour write price)" }),
    ),
    reasoningTokens: Type.Optional(Type.Integer({ description: 'Extension: of outputTokens, spent on reasoning' })),
  }),
  model: Type.String(),
  requestId: Type.String(),
  refusal: Type.Optional(
    Type.String({
      description:
        "Extension: the model's refusal in its own words, when its provider sends one apart from the text (OpenAI's `message.refusal`; `text` is then usually empty). Charged like any output, as the provider bills it",
    }),
  ),
  toolCalls: Type.Optional(
    Type.Array(Type.Object({ id: Type.String(), name: Type.String(), arguments: Type.String() }), {
      description: 'Extension: the tools the model called (present only when it called some; run them and send the results as tool messages)',
    }),
  ),
  thinking: Type.Optional(
    Type.Array(
      Type.Union([
        Type.Object({ type: Type.Literal('thinking'), thinking: Type.String(), signature: Type.String() }),
        Type.Object({ type: Type.Literal('redacted_thinking'), data: Type.String() }),
      ]),
      {
        description: "Extension: the model's thinking blocks, when its provider returns them (never part of text)",
      },
    ),
  ),
});

export const EnhanceBody = StrictObject({
  model: ModelSlug,
  prompt: Type.String({ minLength: 1, maxLength: MAX_PROMPT_CHARS, pattern: '\\S' }),
  target: Type.Optional(Type.Enum(ENHANCE_TARGETS, { description: 'Default text; bare audio means audio.speech' })),
});

export const EnhanceResponse = Type.Object({ enhanced: Type.String() });

/** Other headers pass; this one is checked when present. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7E]+$',
      description: 'Replays the first answer for the same body without charging again (kept 24 hours)',
    }),
  ),
});
