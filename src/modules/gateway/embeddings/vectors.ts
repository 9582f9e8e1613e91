import { UpstreamError } from '../providers/types.js';

/**
 * Vectors as the embeddings routes keep and send them. A call's answer is kept (for its Idempotency-Key) as base64 of
 * little-endian float32s, OpenAI's `encoding_format: "base64"` and what its SDK decodes: a quarter of the size of JSON
 * numbers. Answers in floats are decoded from it, so a replay gives exactly the numbers of the first answer.
 */

export type EncodingFormat = 'float' | 'base64';

export function encodeVector(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (const [i, value] of vector.entries()) bytes.writeFloatLE(value, i * 4);
  return bytes.toString('base64');
}

export function decodeVector(encoded: string): number[] {
  const bytes = Buffer.from(encoded, 'base64');
  return Array.from({ length: bytes.length >> 2 }, (_, i) => bytes.readFloatLE(i * 4));
}

export const renderVectors = (vectors: readonly string[], format: EncodingFormat): Array<number[] | string> =>
  format === 'base64' ? [...vectors] : vectors.map(decodeVector);

/**
 * A provider's vectors checked: one per input, all of the same length, numbers only. With `dimensions`, each is cut to
 * that length (a server that ignores the field sends more) and normalised again: how OpenAI's text-embedding-3 models
 * shorten theirs, and what Google asks callers to do with the truncated gemini-embedding-001 vectors.
 */
export function checkedVectors(vectors: readonly number[][], inputs: number, dimensions: number | undefined): number[][] {
  if (vectors.length !== inputs)
    throw new UpstreamError('server', `The provider returned ${vectors.length} embeddings for ${inputs} inputs.`, null, 'malformed_response');
  const fitted = dimensions === undefined ? vectors : vectors.map((vector) => normalised(vector.slice(0, dimensions)));
  const length = fitted[0]?.length ?? 0;
  if (length === 0 || fitted.some((vector) => vector.length !== length || vector.some((value) => !Number.isFinite(value)))) {
    throw new UpstreamError('server', 'The provider returned embeddings of unequal lengths or with values that are not numbers.', null, 'malformed_response');
  }
  return fitted as number[][];
}

function normalised(vector: number[]): number[] {
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  return norm > 0 ? vector.map((value) => value / norm) : vector;
}
