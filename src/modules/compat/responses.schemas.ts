import { Type, type Static } from 'typebox';
import { Nullable, StrictObject } from '../../platform/http/schemas.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../gateway/index.js';

/**
 * OpenAI's Responses API shapes for `/openai/v1/responses`. Items, parts, tools and tool choices are read loosely here
 * (any `type`) and checked in responses.input.ts / responses.format.ts, so a built-in tool or an unsupported item is
 * refused with a message naming it rather than a schema error. Fields the SDK may send and nothing reads pass, as on
 * chat completions; the ones that would change the answer are refused by name.
 */

const Text = Type.String({ maxLength: MAX_MESSAGE_CHARS });
const JsonSchema = Type.Record(Type.String(), Type.Unknown());
/** A JSON object answered as it is (a tool's parameters, a response schema, metadata). */
const AnyObject = Type.Object({}, { additionalProperties: true });

const InputPart = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 64, description: 'input_text or input_image (user messages); output_text or refusal (assistant messages)' }),
  text: Type.Optional(Text),
  image_url: Type.Optional(
    Nullable(Type.String({ maxLength: 8_000_000, description: 'https URL, or data:image/...;base64 (PNG, JPEG, GIF or WebP, at most 5 MB)' })),
  ),
  detail: Type.Optional(Nullable(Type.Enum(['auto', 'low', 'high', 'original']))),
  file_id: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  refusal: Type.Optional(Text),
});
const PartsOrText = Type.Union([Text, Type.Array(InputPart, { minItems: 1, maxItems: 100 })]);

/**
 * A reasoning item sent back grows with the thinking (up to a model's whole output, some 250,000 characters, a third
 * more as base64); the request's body limit bounds the whole.
 */
const MAX_ENCRYPTED_CONTENT_CHARS = 2_000_000;
const SummaryText = Type.Object({ type: Type.Literal('summary_text'), text: Type.String() });

const InputItem = Type.Object({
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'message (the default for an item with role and content), function_call, function_call_output or reasoning (see encrypted_content)',
    }),
  ),
  id: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  role: Type.Optional(
    Type.Enum(['user', 'assistant', 'system', 'developer'], { description: 'Messages: `developer` and `system` are read as system messages' }),
  ),
  // Null (or reasoning text, read past) on a reasoning item sent back; a message needs content.
  content: Type.Optional(Nullable(PartsOrText)),
  // The summary is the thinking's whole text here, which can outgrow a message: bounded like encrypted_content.
  summary: Type.Optional(
    Type.Array(Type.Object({ type: Type.String({ maxLength: 64 }), text: Type.Optional(Type.String({ maxLength: MAX_ENCRYPTED_CONTENT_CHARS })) }), {
      maxItems: 100,
      description: 'reasoning: its summary (kept with the item, not sent to the model)',
    }),
  ),
  encrypted_content: Type.Optional(
    Nullable(
      Type.String({
        maxLength: MAX_ENCRYPTED_CONTENT_CHARS,
        description:
          "reasoning: the value an earlier answer's reasoning item carried, unchanged. Its thinking goes back to the model at the start of the assistant turn that follows the item (an Anthropic model needs it to continue after a tool call); a value this gateway did not write is refused. A reasoning item without it is read past",
      }),
    ),
  ),
  call_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'function_call and function_call_output: the call' })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  namespace: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64, description: 'function_call: the namespace tool its function belongs to' }))),
  arguments: Type.Optional(Text),
  output: Type.Optional(PartsOrText),
  status: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
});

/** Agents describe their tools at length (Codex CLI's spawn_agent: about 6,000 characters). */
export const MAX_TOOL_DESCRIPTION_CHARS = 16_000;
const toolFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' })),
  description: Type.Optional(Nullable(Type.String({ maxLength: MAX_TOOL_DESCRIPTION_CHARS }))),
  parameters: Type.Optional(Nullable(JsonSchema)),
  strict: Type.Optional(Nullable(Type.Boolean())),
};
const NestedTool = Type.Object({ type: Type.String({ minLength: 1, maxLength: 64, description: 'function (others are left out)' }), ...toolFields });
const Tool = Type.Object({
  type: Type.String({
    minLength: 1,
    maxLength: 64,
    description:
      'function, or namespace (its function tools are offered as `<namespace>__<name>` and their calls answered with `name` and `namespace`). Built-in tools (web_search, file_search...) and custom tools are left out, named in the x-storefront-ignored header',
  }),
  ...toolFields,
  tools: Type.Optional(Type.Array(NestedTool, { maxItems: 128, description: 'namespace: its function tools' })),
});

const ToolChoice = Type.Union([
  Type.Enum(['auto', 'none', 'required']),
  Type.Object({
    type: Type.String({ minLength: 1, maxLength: 64, description: 'function' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    namespace: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64, description: 'The namespace tool of the function' }))),
  }),
]);

const TextFormat = Type.Union([
  Type.Object({ type: Type.Enum(['text', 'json_object']) }),
  Type.Object({
    type: Type.Literal('json_schema'),
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
    schema: JsonSchema,
    strict: Type.Optional(Nullable(Type.Boolean())),
    description: Type.Optional(Type.String({ maxLength: 4_000 })),
  }),
]);

const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 512 }), {
  maxProperties: 16,
  propertyNames: { maxLength: 64 },
  description: 'Up to 16 pairs (keys up to 64 characters, values up to 512), answered back and kept with the response',
});

export const ResponseCreateBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'A model id from GET /openai/v1/models' }),
  input: Type.Union([Text, Type.Array(InputItem, { minItems: 1, maxItems: MAX_MESSAGES })], {
    description:
      'A user message, or a list of message, function_call, function_call_output and reasoning items (reasoning items sent back from earlier answers)',
  }),
  instructions: Type.Optional(
    Nullable(Type.String({ maxLength: MAX_MESSAGE_CHARS, description: 'A system message placed first (not carried to the next response)' })),
  ),
  tools: Type.Optional(Type.Array(Tool, { maxItems: 128 })),
  tool_choice: Type.Optional(Nullable(ToolChoice)),
  parallel_tool_calls: Type.Optional(Nullable(Type.Boolean())),
  text: Type.Optional(
    Nullable(Type.Object({ format: Type.Optional(Nullable(TextFormat)), verbosity: Type.Optional(Nullable(Type.Enum(['low', 'medium', 'high']))) })),
  ),
  max_output_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000 }))),
  temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
  top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  metadata: Type.Optional(Nullable(Metadata)),
  store: Type.Optional(Nullable(Type.Boolean({ description: 'Keep the response for 30 days (default true)' }))),
  previous_response_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200, description: 'Continue the conversation of a stored response' }))),
  user: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
  safety_identifier: Type.Optional(Nullable(Type.String({ maxLength: 256, description: 'Sent to the provider as its end-user id (as `user`)' }))),
  truncation: Type.Optional(Nullable(Type.Enum(['auto', 'disabled']))),
  stream: Type.Optional(Nullable(Type.Boolean({ description: 'Answer with the Responses streaming events (server-sent events)' }))),
  stream_options: Type.Optional(Nullable(Type.Object({ include_obfuscation: Type.Optional(Type.Boolean()) }))),
  prompt_cache_key: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 1_024,
        description:
          'A prompt-cache routing hint: read and not passed on (providers here cache by prefix on their own); cached input is billed as such whatever it says',
      }),
    ),
  ),
  prompt_cache_retention: Type.Optional(Nullable(Type.String({ maxLength: 32, description: 'Read and not passed on' }))),
  client_metadata: Type.Optional(
    Nullable(
      Type.Record(Type.String(), Type.Unknown(), { description: "The client's own metadata (Codex sends trace context): read, neither passed on nor kept" }),
    ),
  ),
  include: Type.Optional(
    Nullable(
      Type.Array(Type.String({ maxLength: 100 }), {
        maxItems: 20,
        description:
          "Extra output to include. `reasoning.encrypted_content`: each reasoning item carries `encrypted_content`, the model's thinking blocks (with their signatures) as one opaque string; send the item back unchanged before the items that followed it and the thinking goes back to the model, as a client with `store: false` must for an Anthropic model to continue after a tool call. Without it, reasoning items carry their summary only. `message.output_text.logprobs` is refused; the others name what is always sent or not served",
      }),
    ),
  ),
  reasoning: Type.Optional(
    Nullable(
      Type.Object(
        {
          effort: Type.Optional(
            Nullable(Type.Enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'], { description: '`xhigh` (Codex CLI sends it) is sent as `high`' })),
          ),
          summary: Type.Optional(Nullable(Type.Enum(['auto', 'concise', 'detailed', 'none']))),
        },
        {
          description:
            "Sent to reasoning models in their provider's terms (Anthropic's as a thinking budget); the thinking the provider returns comes back as a reasoning item's summary (and as its encrypted_content with `include: [\"reasoning.encrypted_content\"]`). A model without a reasoning control answers without it, and the `x-storefront-ignored: reasoning` header says so",
        },
      ),
    ),
  ),
});
export type ResponseCreateRequest = Static<typeof ResponseCreateBody>;
export type WireInputItem = Static<typeof InputItem>;
export type WireInputPart = Static<typeof InputPart>;
export type WireTool = Static<typeof Tool>;
export type WireNestedTool = Static<typeof NestedTool>;

const ItemStatus = Type.Enum(['in_progress', 'completed', 'incomplete']);
const OutputText = Type.Object({ type: Type.Literal('output_text'), text: Type.String(), annotations: Type.Array(Type.Unknown()) });
/** The model's refusal in its own words (OpenAI's `refusal` content part, https://platform.openai.com/docs/api-reference/responses/object). */
const Refusal = Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() });
const OutputMessage = Type.Object({
  type: Type.Literal('message'),
  id: Type.String(),
  role: Type.Literal('assistant'),
  status: ItemStatus,
  content: Type.Array(Type.Union([OutputText, Refusal])),
});
const FunctionCall = Type.Object({
  type: Type.Literal('function_call'),
  id: Type.String(),
  call_id: Type.String(),
  name: Type.String(),
  namespace: Type.Optional(Type.String({ description: 'The namespace tool the function belongs to (its `name` is then the function inside it)' })),
  arguments: Type.String(),
  status: ItemStatus,
});
const ReasoningItem = Type.Object({
  type: Type.Literal('reasoning'),
  id: Type.String(),
  summary: Type.Array(SummaryText),
  encrypted_content: Type.Optional(
    Type.String({
      description:
        'With `include: ["reasoning.encrypted_content"]`: the thinking blocks (signatures and redacted blocks included) as one opaque string, to send back unchanged with this item on a later turn',
    }),
  ),
});
const FunctionCallOutput = Type.Object({
  type: Type.Literal('function_call_output'),
  id: Type.String(),
  call_id: Type.String(),
  output: Type.String(),
  status: ItemStatus,
});
const InputMessage = Type.Object({
  type: Type.Literal('message'),
  id: Type.String(),
  role: Type.Enum(['user', 'assistant', 'system', 'developer']),
  status: ItemStatus,
  content: Type.Array(
    Type.Object({
      type: Type.String({ description: 'input_text, input_image, output_text or refusal' }),
      text: Type.Optional(Type.String()),
      image_url: Type.Optional(Type.String()),
      file_id: Type.Optional(Type.String({ description: 'The stored file that keeps an image sent inline (its URL is image_url); it goes with the response' })),
      detail: Type.Optional(Type.String()),
      refusal: Type.Optional(Type.String()),
      annotations: Type.Optional(Type.Array(Type.Unknown())),
    }),
  ),
});

const Usage = Type.Object({
  input_tokens: Type.Integer(),
  input_tokens_details: Type.Object({
    cached_tokens: Type.Integer({ description: 'Of input_tokens: read from the prompt cache' }),
    cache_write_tokens: Type.Optional(Type.Integer({ description: 'Of input_tokens: written to the prompt cache (providers that bill writes)' })),
    cache_write_1h_tokens: Type.Optional(
      Type.Integer({ description: "Extension: of cache_write_tokens, written to a 1-hour cache entry (Anthropic's ttl 1h, billed at its own price)" }),
    ),
  }),
  output_tokens: Type.Integer(),
  output_tokens_details: Type.Object({ reasoning_tokens: Type.Integer({ description: 'Of output_tokens: spent on reasoning' }) }),
  total_tokens: Type.Integer(),
  tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
});

export const ResponseObject = Type.Object({
  id: Type.String({ description: 'resp_…' }),
  object: Type.Literal('response'),
  created_at: Type.Integer(),
  completed_at: Nullable(Type.Integer()),
  status: Type.Enum(['completed', 'incomplete', 'failed', 'in_progress']),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  incomplete_details: Nullable(Type.Object({ reason: Type.Enum(['max_output_tokens', 'content_filter']) })),
  instructions: Nullable(Type.String()),
  max_output_tokens: Nullable(Type.Integer()),
  metadata: AnyObject,
  model: Type.String(),
  output: Type.Array(Type.Union([ReasoningItem, OutputMessage, FunctionCall])),
  output_text: Type.String({ description: 'The output text joined (the SDKs compute it too)' }),
  parallel_tool_calls: Type.Boolean(),
  previous_response_id: Nullable(Type.String()),
  store: Type.Boolean(),
  temperature: Nullable(Type.Number()),
  text: Type.Object({ format: AnyObject, verbosity: Type.Optional(Nullable(Type.String())) }),
  tool_choice: Type.Union([
    Type.Enum(['auto', 'none', 'required']),
    Type.Object({ type: Type.Literal('function'), name: Type.String(), namespace: Type.Optional(Type.String()) }),
  ]),
  tools: Type.Array(
    Type.Object({
      type: Type.Literal('function'),
      name: Type.String(),
      description: Nullable(Type.String()),
      parameters: Nullable(AnyObject),
      strict: Nullable(Type.Boolean()),
    }),
    {
      description: "The function tools offered (a namespace's as `<namespace>__<name>`; built-in tools left out)",
    },
  ),
  top_p: Nullable(Type.Number()),
  truncation: Type.Enum(['auto', 'disabled']),
  usage: Nullable(Usage),
  user: Type.Optional(Type.String()),
});
export type ResponseObjectBody = Static<typeof ResponseObject>;
export type OutputItem = ResponseObjectBody['output'][number];

export const ResponseIdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 200, description: 'resp_…' }) });

const IncludeList = Type.Array(Type.String({ maxLength: 100 }), {
  maxItems: 20,
  description: '`reasoning.encrypted_content`: reasoning items carry their encrypted_content (others change nothing)',
});
/** The OpenAI SDKs send a list as `include[]=...`; plain `include=...` is read too. */
const includeQuery = { include: Type.Optional(IncludeList), 'include[]': Type.Optional(IncludeList) };
/** The query's include list, however it was spelled. */
export const includeOf = (query: { include?: string[]; 'include[]'?: string[] }): string[] => [...(query.include ?? []), ...(query['include[]'] ?? [])];

export const RetrieveQuery = Type.Object({
  stream: Type.Optional(Type.Boolean({ description: 'Not served: only background responses can be streamed again' })),
  ...includeQuery,
});

export const InputItemsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  order: Type.Optional(Type.Enum(['asc', 'desc'], { default: 'desc', description: 'desc (the default): the last input item first' })),
  after: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'An item id: the page starts after it' })),
  ...includeQuery,
});

export const InputItemList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Union([InputMessage, FunctionCall, FunctionCallOutput, ReasoningItem])),
  first_id: Nullable(Type.String()),
  last_id: Nullable(Type.String()),
  has_more: Type.Boolean(),
});

export const ResponseDeleted = Type.Object({ id: Type.String(), object: Type.Literal('response'), deleted: Type.Literal(true) });
