import { Type } from 'typebox';
import { StrictObject } from '../../platform/http/schemas.js';
import { ENHANCE_TARGETS } from './instructions.js';

/** Limits of the gateway's own request fields (the spec leaves them open; the 1 MB body limit applies too). */
export const MAX_MESSAGES = 500;
export const MAX_MESSAGE_CHARS = 200_000;
export const MAX_PROMPT_CHARS = 8_000;

const ModelSlug = Type.String({ minLength: 1, maxLength: 200, description: 'A model slug from GET /v1/models' });

export const ChatMessageSchema = StrictObject({
  role: Type.Enum(['system', 'user', 'assistant']),
  content: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS }),
});

export const TextBody = StrictObject({
  model: ModelSlug,
  messages: Type.Array(ChatMessageSchema, { minItems: 1, maxItems: MAX_MESSAGES }),
  maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Default 2048' })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  stream: Type.Optional(
    Type.Boolean({
      description:
        'Answer with server-sent events: `data: <json>` per event; `text` {type, delta}, `usage` {type, usage}, `finish` {type, finishReason}, `error` {type, error: {code, message}}',
    }),
  ),
});

export const TextResponse = Type.Object({
  text: Type.String(),
  usage: Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer(), creditsConsumed: Type.Integer({ description: 'Tokens charged to the wallet' }) }),
  model: Type.String(),
  requestId: Type.String(),
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
    Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$', description: 'Replays the first answer for the same body without charging again (kept 24 hours)' }),
  ),
});
