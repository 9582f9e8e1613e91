import { createHash } from 'node:crypto';

/**
 * Extended thinking in the fake Anthropic API, checked as the real API checks it
 * (https://docs.claude.com/en/docs/build-with-claude/extended-thinking): `thinking.budget_tokens` at least 1024 and
 * below `max_tokens`; each thinking block sent back must carry the signature it was given (the fake signs with a
 * hash of the text); and with thinking enabled, the assistant turn whose tool calls the last user turn answers must
 * start with its thinking block.
 */

export const signatureOf = (thinking: string) => `sig_${createHash('sha256').update(thinking).digest('base64')}`;

/** What the fake "thinks" about a request, when thinking is enabled. */
export const thinkingTextOf = (body: any): string | null => (body?.thinking?.type === 'enabled' ? `Let me think about ${body.messages?.length ?? 0} message(s) step by step.` : null);

export function thinkingBlockProblem(block: any, at: string): string | null {
  if (block.type === 'redacted_thinking') return typeof block.data === 'string' ? null : `${at}.redacted_thinking.data: Field required`;
  if (typeof block.thinking !== 'string') return `${at}.thinking.thinking: Field required`;
  if (typeof block.signature !== 'string' || block.signature !== signatureOf(block.thinking)) return `${at}: Invalid \`signature\` in \`thinking\` block`;
  return null;
}

const blocksOf = (content: unknown): any[] => (Array.isArray(content) ? content : []);

export function thinkingProblem(body: any): string | null {
  const thinking = body.thinking;
  if (thinking === undefined) return null;
  if (thinking?.type === 'disabled') return null;
  if (thinking?.type !== 'enabled') return "thinking: Input tag found using 'type' does not match any of the expected tags: 'enabled', 'disabled'";
  if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (thinking.budget_tokens >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
  const messages: any[] = body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role !== 'user' || !blocksOf(last.content).some((b) => b.type === 'tool_result')) return null;
  const at = messages.length - 2;
  const first = blocksOf(messages[at]?.content)[0];
  if (first?.type === 'thinking' || first?.type === 'redacted_thinking') return null;
  return `messages.${at}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type ?? 'text')}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
}
