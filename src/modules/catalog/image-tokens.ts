import type { Capabilities } from './capabilities.js';
import type { UsageUnits } from './pricing.js';

/**
 * Image models billed by tokens rather than per image (OpenAI's GPT Image): the provider charges the prompt's text
 * tokens, the source image's tokens and the image's output tokens, and the output tokens of one image are fixed by its
 * quality and size. The catalog row carries that table in `capabilities.flags.imageTokens`, next to its per-token
 * prices, so operators can correct it without a release and clients can read it; a row without it is priced per image.
 */
export interface ImageTokenTable {
  /** Output tokens of one image, by quality, then by `WIDTHxHEIGHT`. */
  output: Record<string, Record<string, number>>;
  /** The most input tokens one source image can cost (the reservation counts this much per source image). */
  sourceImageMax: number;
}

/** Quality values that let the model choose: reserved as the dearest quality the table lists. */
const CHOOSING = new Set(['auto']);

/** Tokens a prompt's framing adds to its own (role markers, an edit's image placeholder): a margin, not a count. */
export const PROMPT_FRAMING_TOKENS = 64;

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** The model's token table, or null when it is priced per image (or the table on its row is malformed). */
export function imageTokenTable(capabilities: Pick<Capabilities, 'flags'>): ImageTokenTable | null {
  const raw = capabilities.flags?.imageTokens as { output?: unknown; sourceImageMax?: unknown } | undefined;
  if (!raw || typeof raw !== 'object' || !raw.output || typeof raw.output !== 'object' || !isCount(raw.sourceImageMax)) return null;
  const output: Record<string, Record<string, number>> = {};
  for (const [quality, sizes] of Object.entries(raw.output as Record<string, unknown>)) {
    if (!sizes || typeof sizes !== 'object') return null;
    const row = Object.entries(sizes as Record<string, unknown>);
    if (row.length === 0 || !row.every(([, tokens]) => isCount(tokens))) return null;
    output[quality] = Object.fromEntries(row) as Record<string, number>;
  }
  return Object.keys(output).length > 0 ? { output, sourceImageMax: raw.sourceImageMax } : null;
}

/**
 * Output tokens of one image. A quality that lets the model choose (`auto`), none at all, or one the table does not
 * list counts as the dearest listed; a size the table does not list counts as the quality's dearest size. Both
 * fallbacks are the worst case, so a reservation made with them always covers the call.
 */
export function outputTokensPerImage(table: ImageTokenTable, quality: string | null | undefined, width: number, height: number): number {
  const size = `${width}x${height}`;
  const rows = quality && !CHOOSING.has(quality) && table.output[quality] ? [table.output[quality]] : Object.values(table.output);
  let worst = 0;
  for (const row of rows) worst = Math.max(worst, row[size] ?? Math.max(...Object.values(row)));
  return worst;
}

/** The most tokens a prompt can cost: a token is at least one byte of UTF-8, plus its framing. */
export const promptTokenBound = (prompt: string): number => Buffer.byteLength(prompt, 'utf8') + PROMPT_FRAMING_TOKENS;

export interface ImageTokenRequest {
  count: number;
  quality?: string | null;
  width?: number;
  height?: number;
  /** Text tokens of the prompt (an upper bound when reserving); the framing margin alone when unknown. */
  promptTokens?: number;
  /** Source images sent with the prompt (an edit). */
  sourceImages?: number;
}

/** The usage a call of this shape costs at most: its prompt and source images once, and `count` images' output. */
export function imageTokenUsage(table: ImageTokenTable, request: ImageTokenRequest): UsageUnits {
  const imageInputTokens = (request.sourceImages ?? 0) * table.sourceImageMax;
  const textTokens = request.promptTokens ?? PROMPT_FRAMING_TOKENS;
  return {
    inputTokens: textTokens + imageInputTokens,
    imageInputTokens,
    outputTokens: request.count * outputTokensPerImage(table, request.quality, request.width ?? 1024, request.height ?? 1024),
  };
}
