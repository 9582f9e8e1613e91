import type { OpenAiEndpoint } from './http.js';
import { UpstreamError, type EmbeddingRequest, type EmbeddingResult, type UpstreamCredential } from '../types.js';

/**
 * `POST /embeddings` of OpenAI-compatible APIs.
 *
 * OpenAI (https://developers.openai.com/api/reference/resources/embeddings, read 2025-10): `{ model, input: string[],
 * dimensions? (text-embedding-3 and later), encoding_format?, user? }`; at most 2048 inputs, 8192 tokens each and
 * 300,000 in all; answers `{ data: [{ index, embedding }], usage: { prompt_tokens, total_tokens } }`.
 *
 * Google's OpenAI compatibility (https://ai.google.dev/gemini-api/docs/openai#embeddings, read 2025-10) serves the
 * same route for gemini-embedding-001, with differences handled here: it takes at most 100 inputs per request
 * (it answers "BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"), so longer batches
 * are sent in pieces; it may send no usage (the gateway then counts the input itself); and an invalid key is an HTTP
 * 400 ("API key not valid"), read as the account's fault in `http.ts`.
 *
 * `encoding_format` is never sent: floats are every server's default, and some refuse base64.
 */

/** Inputs one request may carry, by provider (OpenAI's limit otherwise). */
const INPUTS_PER_CALL: Record<string, number> = { google: 100 };
const DEFAULT_INPUTS_PER_CALL = 2048;

/** Google's invalid or expired key, answered as a 400 on its OpenAI-compatible routes. */

interface WireEmbedding {
  index?: unknown;
  embedding?: unknown;
}

/** A vector as the provider sent it: numbers, or base64 of little-endian float32s. */
function vectorOf(embedding: unknown): number[] {
  if (Array.isArray(embedding) && embedding.every((value) => typeof value === 'number')) return embedding;
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64');
    return Array.from({ length: Math.floor(bytes.length / 4) }, (_, i) => bytes.readFloatLE(i * 4));
  }
  throw new UpstreamError('server', 'The provider sent an embedding that is neither numbers nor base64.', null, 'malformed_response');
}

async function embedOnce(endpoint: OpenAiEndpoint, credential: UpstreamCredential, request: EmbeddingRequest, input: string[]): Promise<EmbeddingResult> {
  const body = {
    model: request.model,
    input,
    ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }),
    ...(request.user === undefined ? {} : { user: request.user }),
  };
  // An invalid Google key (an HTTP 400) is read as the account's fault by `statusError` in http.ts.
  const answer = await endpoint.json('/embeddings', body, { timeoutMs: credential.timeoutMs, signal: request.signal, model: request.model });
  const data = Array.isArray(answer.data) ? (answer.data as WireEmbedding[]) : [];
  if (data.length !== input.length) {
    throw new UpstreamError('server', `The provider returned ${data.length} embeddings for ${input.length} inputs.`, null, 'malformed_response');
  }
  // Answers are in input order by `index`; a server that leaves it out answers in order.
  const ordered = data.every((item) => typeof item.index === 'number') ? [...data].sort((a, b) => (a.index as number) - (b.index as number)) : data;
  const usage = answer.usage as { prompt_tokens?: unknown } | undefined;
  return {
    vectors: ordered.map((item) => vectorOf(item.embedding)),
    usage: typeof usage?.prompt_tokens === 'number' ? { inputTokens: usage.prompt_tokens } : null,
  };
}

/** Embeds the request's inputs in as many requests as the provider needs, in order; usage is summed when every piece reported it. */
export async function embedThrough(endpoint: OpenAiEndpoint, credential: UpstreamCredential, request: EmbeddingRequest): Promise<EmbeddingResult> {
  const perCall = INPUTS_PER_CALL[credential.providerSlug] ?? DEFAULT_INPUTS_PER_CALL;
  const vectors: number[][] = [];
  let inputTokens: number | null = 0;
  for (let start = 0; start < request.input.length; start += perCall) {
    const piece = await embedOnce(endpoint, credential, request, request.input.slice(start, start + perCall));
    vectors.push(...piece.vectors);
    inputTokens = piece.usage && inputTokens !== null ? inputTokens + piece.usage.inputTokens : null;
  }
  return { vectors, usage: inputTokens === null ? null : { inputTokens } };
}
