/**
 * What the fake Anthropic Messages API refuses, with the messages the real API gives (400 invalid_request_error):
 * roles that do not alternate, tool results that answer no tool_use of the previous assistant turn (or do not open
 * the turn), tool_use without results, empty text, invalid images, invalid tools and cache markers, temperature
 * together with top_p (refused by current Claude models), what extended thinking does not combine with
 * (anthropic-thinking.fake.ts: sampling changes and a forced tool_choice), and malformed structured outputs or a model
 * without them (anthropic-structured.fake.ts).
 */

import { outputConfigProblem } from './anthropic-structured.fake.js';
import { thinkingBlockProblem, thinkingProblem } from './anthropic-thinking.fake.js';

const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_CACHE_BREAKPOINTS = 4;

const isObject = (value: unknown): value is Record<string, any> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The image type its first bytes say, or null. */
function sniffImage(bytes: Buffer): string | null {
  if (bytes.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) return 'image/png';
  if (bytes.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))) return 'image/jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return null;
}

function imageProblem(block: any, at: string): string | null {
  const source = block.source;
  if (!isObject(source)) return `${at}.image.source: Field required`;
  if (source.type === 'url') {
    try {
      const url = new URL(source.url);
      return url.protocol === 'https:' || url.protocol === 'http:' ? null : `${at}.image.source.url: Only http and https URLs are supported.`;
    } catch {
      return `${at}.image.source.url: Input should be a valid URL`;
    }
  }
  if (source.type !== 'base64')
    return `${at}.image.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags: 'base64', 'file', 'url'`;
  if (!IMAGE_TYPES.includes(source.media_type))
    return `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
  if (typeof source.data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(source.data)) return `${at}.image.source.base64.data: invalid base64 data`;
  const actual = sniffImage(Buffer.from(source.data, 'base64'));
  if (!actual) return `${at}.image.source.base64.data: Could not process image`;
  if (actual !== source.media_type)
    return `${at}.image.source.base64.data: The image was specified using the ${source.media_type} media type, but the image appears to be a ${actual} image`;
  return null;
}

function textProblem(block: any): string | null {
  return typeof block.text !== 'string' || block.text.length === 0 ? 'messages: text content blocks must be non-empty' : null;
}

function blockProblem(block: any, role: string, at: string): string | null {
  switch (block?.type) {
    case 'text':
      return textProblem(block);
    case 'image':
      return role === 'user' ? imageProblem(block, at) : `${at}: Image blocks are only allowed in user messages`;
    case 'tool_use':
      if (role !== 'assistant') return `${at}: tool_use blocks are only allowed in assistant messages`;
      if (typeof block.id !== 'string' || !block.id) return `${at}.tool_use.id: Field required`;
      return isObject(block.input) ? null : `${at}.tool_use.input: Input should be a valid dictionary`;
    case 'tool_result': {
      if (role !== 'user') return `${at}: tool_result blocks are only allowed in user messages`;
      if (!Array.isArray(block.content)) return null;
      for (const [k, inner] of block.content.entries()) {
        const problem =
          inner?.type === 'text'
            ? textProblem(inner)
            : inner?.type === 'image'
              ? imageProblem(inner, `${at}.tool_result.content.${k}`)
              : `${at}.tool_result.content.${k}: Input tag '${String(inner?.type)}' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'`;
        if (problem) return problem;
      }
      return null;
    }
    case 'thinking':
    case 'redacted_thinking':
      if (role !== 'assistant') return `${at}: thinking blocks are only allowed in assistant messages`;
      return thinkingBlockProblem(block, at);
    default:
      return `${at}: Input tag '${String(block?.type)}' found using 'type' does not match any of the expected tags: 'text', 'image', 'tool_use', 'tool_result', 'document'`;
  }
}

const blocksOf = (content: unknown): any[] => (Array.isArray(content) ? content : typeof content === 'string' ? [{ type: 'text', text: content }] : []);

function messagesProblem(messages: unknown): string | null {
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  let previousToolUses: string[] = [];
  for (const [i, message] of messages.entries()) {
    if (message?.role !== 'user' && message?.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && message.role !== 'user') return 'messages: first message must use the "user" role';
    if (i > 0 && messages[i - 1].role === message.role)
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${message.role}" roles in a row`;
    const { content } = message;
    if (typeof content === 'string') {
      if (!content && i < messages.length - 1) return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    } else if (!Array.isArray(content) || content.length === 0) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    const blocks = blocksOf(content);
    for (const [j, block] of (Array.isArray(content) ? blocks : []).entries()) {
      const problem = blockProblem(block, message.role, `messages.${i}.content.${j}`);
      if (problem) return problem;
    }
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'tool_result' && !previousToolUses.includes(block.tool_use_id)) {
        return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
    if (previousToolUses.length > 0) {
      const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
      const leading = (firstOther === -1 ? blocks : blocks.slice(0, firstOther)).map((b) => b.tool_use_id);
      const missing = previousToolUses.filter((id) => !leading.includes(id));
      if (missing.length > 0) {
        return blocks.some((b) => b.type === 'tool_result')
          ? `messages.${i}: Did not find ${missing.length} \`tool_result\` block(s) at the beginning of this message. Messages following \`tool_use\` blocks must begin with a matching number of \`tool_result\` blocks.`
          : `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
    previousToolUses = message.role === 'assistant' ? blocks.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
  }
  return null;
}

function toolsProblem(body: any): string | null {
  if (body.tools === undefined) return body.tool_choice === undefined ? null : 'tool_choice: tool_choice may only be specified while providing tools.';
  if (!Array.isArray(body.tools)) return 'tools: Input should be a valid list';
  const names = new Set<string>();
  for (const [k, tool] of body.tools.entries()) {
    if (typeof tool?.name !== 'string' || !TOOL_NAME.test(tool.name)) return `tools.${k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    if (!isObject(tool.input_schema)) return `tools.${k}.custom.input_schema: Field required`;
    if (tool.input_schema.type !== 'object') return `tools.${k}.custom.input_schema.type: Input should be 'object'`;
    if (names.has(tool.name)) return 'tools: Tool names must be unique.';
    names.add(tool.name);
  }
  const choice = body.tool_choice;
  if (choice === undefined) return null;
  if (!['auto', 'any', 'tool', 'none'].includes(choice?.type))
    return `tool_choice: Input tag '${String(choice?.type)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`;
  if (choice.type === 'tool' && !names.has(choice.name)) return `tool_choice.name: Tool '${String(choice.name)}' not found in tools.`;
  return null;
}

/** Every cache_control in prompt order (tools, system, messages); each must be {type: 'ephemeral', ttl?}. */
export function cacheMarkers(body: any): { path: unknown[]; marker: any }[] {
  const found: { path: unknown[]; marker: any }[] = [];
  (Array.isArray(body.tools) ? body.tools : []).forEach(
    (tool: any, k: number) => tool?.cache_control && found.push({ path: ['tools', k], marker: tool.cache_control }),
  );
  (Array.isArray(body.system) ? body.system : []).forEach(
    (block: any, k: number) => block?.cache_control && found.push({ path: ['system', k], marker: block.cache_control }),
  );
  (Array.isArray(body.messages) ? body.messages : []).forEach((message: any, i: number) =>
    (Array.isArray(message?.content) ? message.content : []).forEach(
      (block: any, j: number) => block?.cache_control && found.push({ path: ['messages', i, j], marker: block.cache_control }),
    ),
  );
  return found;
}

function cacheProblem(body: any): string | null {
  const markers = cacheMarkers(body);
  for (const { marker } of markers) {
    if (marker.type !== 'ephemeral') return "cache_control.type: Input should be 'ephemeral'";
    if (marker.ttl !== undefined && marker.ttl !== '5m' && marker.ttl !== '1h') return "cache_control.ttl: Input should be '5m' or '1h'";
  }
  return markers.length > MAX_CACHE_BREAKPOINTS
    ? `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${markers.length}.`
    : null;
}

/** The real API's message for what is wrong with a Messages request body, or null when it would be accepted. */
export function invalidRequest(body: any): string | null {
  if (!isObject(body)) return 'The request body is not valid JSON.';
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) return 'system: Input should be a valid string';
    for (const block of body.system) if (block?.type !== 'text' || textProblem(block)) return 'system: text content blocks must be non-empty';
  }
  if (body.temperature !== undefined && (typeof body.temperature !== 'number' || body.temperature < 0 || body.temperature > 1))
    return 'temperature: range: 0..1';
  if (body.temperature !== undefined && body.top_p !== undefined)
    return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
  if (body.top_k !== undefined && (!Number.isInteger(body.top_k) || body.top_k < 0)) return 'top_k: Input should be a valid integer';
  if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s: unknown) => typeof s !== 'string')))
    return 'stop_sequences: Input should be a valid list';
  if (body.metadata !== undefined && (!isObject(body.metadata) || typeof body.metadata.user_id !== 'string'))
    return 'metadata.user_id: Input should be a valid string';
  return messagesProblem(body.messages) ?? toolsProblem(body) ?? cacheProblem(body) ?? thinkingProblem(body) ?? outputConfigProblem(body);
}
