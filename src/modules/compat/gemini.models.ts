import { createRequire } from 'node:module';
import type * as GptTokenizer from 'gpt-tokenizer';
import type { ModelEntry } from '../catalog/service.js';
import { messageText, type TextBody } from '../gateway/index.js';

/** A catalog model in Google's `Model` shape: `name` is `models/<our model id>`, which the SDK sends back as is. */
export const toGeminiModel = (entry: ModelEntry) => ({
  name: `models/${entry.row.slug}`,
  baseModelId: entry.row.slug,
  version: entry.row.upstreamModel,
  displayName: entry.row.displayName,
  description: entry.row.description ?? '',
  ...(entry.row.maxContextTokens ? { inputTokenLimit: entry.row.maxContextTokens } : {}),
  ...(entry.row.maxOutputTokens ? { outputTokenLimit: entry.row.maxOutputTokens } : {}),
  supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
});

/** Loaded by the first count, as the gateway does: its tables are large and most instances never count here. */
let tokenizer: typeof GptTokenizer | undefined;
const loadTokenizer = (): typeof GptTokenizer => (tokenizer ??= createRequire(import.meta.url)('gpt-tokenizer') as typeof GptTokenizer);
const PLAIN = { disallowedSpecial: new Set<string>() };

/**
 * countTokens: the request's text, function calls and results and tool declarations in the o200k encoding the
 * gateway estimates with. An estimate (the upstream model's own tokenizer may differ); no upstream call, no charge.
 */
export function countRequestTokens(body: Pick<TextBody, 'messages' | 'tools'>): number {
  const pieces = body.messages.flatMap((message) => [messageText(message), ...(message.toolCalls ?? []).map((call) => `${call.name}${call.arguments}`)]);
  if (body.tools?.length) pieces.push(JSON.stringify(body.tools));
  const text = pieces.filter(Boolean).join('\n');
  return text ? loadTokenizer().countTokens(text, PLAIN) : 0;
}
