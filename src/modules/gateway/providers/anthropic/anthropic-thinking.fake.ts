import { createHash } from 'node:crypto';

/**
 * Extended thinking in the fake Anthropic API, checked as the real API checks it
 * (https://docs.claude.com/en/docs/build-with-claude/extended-thinking): `thinking.budget_tokens` at least 1024 and
 * below `max_tokens`; each thinking block sent back must carry the signature it was given (the fake signs with a
 * hash of the text); and with thinking enabled, the assistant turn whose tool calls the last user turn answers must
 * start with its thinking block. Its "Feature compatibility" section adds that thinking is not compatible with
 * temperature or top_k modifications nor with forced tool use, and that top_p may only be 0.95 to 1: the fake refuses
 * those with the real API's messages, so a test through it proves the gateway never sends them.
 */

export const signatureOf = (thinking: string) => `sig_${createHash('sha256').update(thinking).digest('base64')}`;

/** What the fake "thinks" about a request, when thinking is enabled. */
export const thinkingTextOf = (body: any): string | null =>
  body?.thinking?.type === 'enabled' ? `Let me think about ${body.messages?.length ?? 0} message(s) step by step.` : null;

export function thinkingBlockProblem(block: any, at: string): string | null {
  if (block.type === 'redacted_thinking') return typeof block.data === 'string' ? null : `${at}.redacted_thinking.data: Field required`;
  if (typeof block.thinking !== 'string') return `${at}.thinking.thinking: Field required`;
  if (typeof block.signature !== 'string' || block.signature !== signatureOf(block.thinking)) return `${at}: Invalid \`signature\` in \`thinking\` block`;
  return null;
}

const blocksOf = (content: unknown): any[] => (Array.isArray(content) ? content : []);

const CONSULT =
  'Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking';

/** What thinking does not combine with (the real API's messages; the top_p one is the docs' rule in the same words). */
function samplingProblem(body: any): string | null {
  if (body.temperature !== undefined && body.temperature !== 1) return `\`temperature\` may only be set to 1 when thinking is enabled. ${CONSULT}`;
  if (body.top_k !== undefined) return `\`top_k\` must be unset when thinking is enabled. ${CONSULT}`;
  if (body.top_p !== undefined && (body.top_p < 0.95 || body.top_p > 1))
    return `\`top_p\` must be between 0.95 and 1, or unset, when thinking is enabled. ${CONSULT}`;
  if (body.tool_choice?.type === 'any' || body.tool_choice?.type === 'tool') return 'Thinking may not be enabled when tool_choice forces tool use.';
  return null;
}

export function thinkingProblem(body: any): string | null {
  const thinking = body.thinking;
  if (thinking === undefined) return null;
  if (thinking?.type === 'disabled') return null;
  if (thinking?.type !== 'enabled') return "thinking: Input tag found using 'type' does not match any of the expected tags: 'enabled', 'disabled'";
  if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024)
    return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (thinking.budget_tokens >= body.max_tokens)
    return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
  const compatibility = samplingProblem(body);
  if (compatibility) return compatibility;
  const messages: any[] = body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role !== 'user' || !blocksOf(last.content).some((b) => b.type === 'tool_result')) return null;
  const at = messages.length - 2;
  const first = blocksOf(messages[at]?.content)[0];
  if (first?.type === 'thinking' || first?.type === 'redacted_thinking') return null;
  return `messages.${at}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type ?? 'text')}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
}
