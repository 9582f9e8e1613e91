import { Type } from 'typebox';
import { Nullable } from '../../platform/http/schemas.js';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../gateway/index.js';

/** Anthropic's Messages API shapes for `/anthropic/v1` (fields the official SDK may add and this service ignores pass). */

const TextBlock = Type.Object({ type: Type.Literal('text'), text: Type.String({ maxLength: MAX_MESSAGE_CHARS }) });
const Content = Type.Union([Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS }), Type.Array(TextBlock, { minItems: 1, maxItems: 100 })]);

export const MessagesBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'A model id from GET /openai/v1/models' }),
  max_tokens: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  messages: Type.Array(Type.Object({ role: Type.Enum(['user', 'assistant']), content: Content }), { minItems: 1, maxItems: MAX_MESSAGES }),
  system: Type.Optional(Content),
  temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  stream: Type.Optional(Nullable(Type.Boolean({ description: 'Answer with message_start … message_stop events' }))),
  tools: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 0, description: 'Tool use is not supported yet' })),
});

export const Message = Type.Object({
  id: Type.String(),
  type: Type.Literal('message'),
  role: Type.Literal('assistant'),
  model: Type.String(),
  content: Type.Array(TextBlock),
  stop_reason: Type.String(),
  stop_sequence: Type.Null(),
  usage: Type.Object({
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    tokens_charged: Type.Integer({ description: "Wallet tokens this call was charged (this service's extension)" }),
  }),
});

export const AnthropicError = Type.Object(
  { type: Type.Literal('error'), error: Type.Object({ type: Type.String(), message: Type.String() }) },
  { $id: 'AnthropicError', description: "Anthropic's error shape" },
);

export const anthropicErrors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('AnthropicError')]));
