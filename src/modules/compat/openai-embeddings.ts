import { Type } from 'typebox';
import { Nullable } from '../../platform/http/schemas.js';
import { badRequest } from '../../platform/http/errors.js';
import { MAX_MESSAGE_CHARS, type CallOptions, type GatewayService } from '../gateway/index.js';

/**
 * OpenAI's `POST /v1/embeddings` (https://developers.openai.com/api/reference/resources/embeddings) over the gateway's
 * embeddings: the same metering, Idempotency-Key and answers as `POST /v1/ai/embeddings`, in OpenAI's shapes. The
 * official SDK asks for `encoding_format: "base64"` unless told otherwise and decodes it (little-endian float32s).
 */

const MAX_INPUTS = 2048;
const Text = Type.String({ maxLength: MAX_MESSAGE_CHARS });

export const EmbeddingCreateBody = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'An embedding model id from GET /openai/v1/models, e.g. local/embed' }),
  input: Type.Union(
    [
      Text,
      Type.Array(Text, { maxItems: MAX_INPUTS }),
      Type.Array(Type.Integer(), { description: 'Token ids: refused (send the text)' }),
      Type.Array(Type.Array(Type.Integer()), { description: 'Token ids: refused (send the texts)' }),
    ],
    { description: `A text or up to ${MAX_INPUTS} texts, each within the model's context, 300,000 tokens in all. Token arrays are refused.` },
  ),
  dimensions: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 16_384 }))),
  encoding_format: Type.Optional(Nullable(Type.Enum(['float', 'base64'], { description: 'Default float; base64 holds little-endian float32s' }))),
  user: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
});

export const CreateEmbeddingResponse = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(
    Type.Object({ object: Type.Literal('embedding'), index: Type.Integer(), embedding: Type.Union([Type.Array(Type.Number()), Type.String()]) }),
  ),
  model: Type.String(),
  usage: Type.Object({
    prompt_tokens: Type.Integer(),
    total_tokens: Type.Integer(),
    tokens_charged: Type.Integer({ description: 'Tokens charged to the wallet' }),
  }),
});

type Body = {
  model: string;
  input: string | string[] | number[] | number[][];
  dimensions?: number | null;
  encoding_format?: 'float' | 'base64' | null;
  user?: string | null;
};

/** The texts of `input`; token ids are refused by name (this service counts and bills text). */
function textsOf(input: Body['input']): string[] {
  if (typeof input === 'string') return [input];
  if ((input as unknown[]).every((item) => typeof item === 'string')) return input as string[];
  throw badRequest('input as token arrays is not supported here: send the texts themselves, as a string or an array of strings.', [
    { field: 'input', message: 'token arrays are not supported' },
  ]);
}

/** `POST /openai/v1/embeddings`: OpenAI's request in, OpenAI's `list` of embeddings out. */
export async function createEmbedding(
  gateway: Pick<GatewayService, 'embeddings'>,
  principal: Parameters<GatewayService['embeddings']['create']>[0],
  body: Body,
  options: CallOptions = {},
) {
  const {
    body: answer,
    replayed,
    recomputed,
  } = await gateway.embeddings.create(
    principal,
    {
      model: body.model,
      input: textsOf(body.input),
      ...(body.dimensions == null ? {} : { dimensions: body.dimensions }),
      ...(body.user == null ? {} : { user: body.user }),
    },
    { ...options, encodingFormat: body.encoding_format ?? 'float' },
  );
  return {
    response: {
      object: 'list' as const,
      data: answer.embeddings.map((embedding, index) => ({ object: 'embedding' as const, index, embedding })),
      model: answer.model,
      usage: { prompt_tokens: answer.usage.inputTokens, total_tokens: answer.usage.inputTokens, tokens_charged: answer.usage.creditsConsumed },
    },
    requestId: answer.requestId,
    replayed,
    recomputed,
  };
}
