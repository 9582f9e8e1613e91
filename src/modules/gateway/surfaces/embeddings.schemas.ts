import { Type } from 'typebox';
import { StrictObject } from '../../../platform/http/schemas.js';
import { MAX_EMBEDDING_INPUTS } from '../embeddings/limits.js';
import { MAX_MESSAGE_CHARS } from './text.schemas.js';

/** Up to 2048 texts of up to 200,000 characters: bodies larger than the default limit. */
export const EMBEDDINGS_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

const Text = Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS });

export const EmbeddingsBody = StrictObject({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'An EMBEDDING model slug from GET /v1/models?type=EMBEDDING, e.g. local/embed' }),
  input: Type.Union([Text, Type.Array(Text, { minItems: 1, maxItems: MAX_EMBEDDING_INPUTS })], {
    description: `A text, or up to ${MAX_EMBEDDING_INPUTS} texts embedded in order; each within the model's context (maxContextTokens), 300,000 tokens in all`,
  }),
  dimensions: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 16_384,
      description: 'Shorter vectors, for models that can shorten theirs (local/embed: at most 256; OpenAI text-embedding-3; Gemini)',
    }),
  ),
  encodingFormat: Type.Optional(
    Type.Enum(['float', 'base64'], { description: 'float (default): arrays of numbers; base64: each vector as base64 of little-endian float32s' }),
  ),
  user: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "Your end user's id, passed to the provider for abuse monitoring" })),
});

export const EmbeddingsResponse = Type.Object({
  embeddings: Type.Array(
    Type.Object({
      index: Type.Integer({ description: 'The position of the text in input' }),
      embedding: Type.Union([Type.Array(Type.Number()), Type.String()], { description: 'A unit vector: numbers, or base64 with encodingFormat base64' }),
    }),
  ),
  dimensions: Type.Integer({ description: 'The length of every vector' }),
  usage: Type.Object({ inputTokens: Type.Integer(), creditsConsumed: Type.Integer({ description: 'Tokens charged to the wallet' }) }),
  model: Type.String(),
  requestId: Type.String(),
});
