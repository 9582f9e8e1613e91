import type { Static } from 'typebox';
import { badRequest } from '../../platform/http/errors.js';
import {
  imagePartFromBase64,
  imagePartFromUrl,
  MAX_IMAGES_PER_REQUEST,
  type ChatMessage,
  type ContentPart,
  type ImagePart,
  type ThinkingBlock,
  type ToolCall,
} from '../gateway/index.js';
import type { ContentBlock, MessagesBody } from './anthropic.schemas.js';

type Block = Static<typeof ContentBlock>;
type Source = NonNullable<Block['source']>;
type InputMessage = Static<typeof MessagesBody>['messages'][number];

/** A 400 about one field, worded as `<field> <problem>`. */
export function refuse(field: string, problem: string): never {
  throw badRequest(`${field} ${problem}`, [{ field, message: problem }]);
}

const TAKEN = 'send text, image, tool_use or tool_result blocks (and an assistant’s thinking blocks)';
const unknownBlock = (block: { type: string }, field: string): never =>
  refuse(field, `is a "${block.type}" block, which this service cannot pass on; ${TAKEN}.`);

/** The caller's cache marker on a part (Anthropic's `cache_control`, passed to providers that take it). */
const cacheOf = (block: { cache_control?: Record<string, unknown> | null }) => (block.cache_control ? { cacheControl: block.cache_control } : {});

/** Plain text when no part needs to stay a part (no image, no cache marker); otherwise the parts in order. */
export function contentOf(parts: ContentPart[]): string | ContentPart[] {
  if (parts.every((part) => part.type === 'text' && !part.cacheControl)) return parts.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
  return parts;
}

/**
 * Anthropic's messages as the gateway's conversation, in order: a `tool_result` block becomes a `tool` message, the
 * blocks around it stay in a user message before or after it; an assistant's `tool_use` blocks become its tool calls.
 */
export function toChatMessages(messages: InputMessage[]): ChatMessage[] {
  const images = { count: 0 };
  const out: ChatMessage[] = [];
  messages.forEach((message, i) => {
    const field = `messages.${i}.content`;
    if (typeof message.content === 'string') out.push({ role: message.role, content: message.content });
    else if (message.role === 'assistant') out.push(assistantMessage(message.content, field));
    else if (message.role === 'system')
      out.push({ role: 'system', content: contentOf(message.content.map((b, j) => textPart(b, `${field}.${j}`, 'system messages take text blocks only'))) });
    else out.push(...userMessages(message.content, field, images));
  });
  return out;
}

function userMessages(blocks: Block[], field: string, images: { count: number }): ChatMessage[] {
  const out: ChatMessage[] = [];
  let parts: ContentPart[] = [];
  const flush = () => {
    if (parts.length > 0) out.push({ role: 'user', content: contentOf(parts) });
    parts = [];
  };
  blocks.forEach((block, j) => {
    const at = `${field}.${j}`;
    if (block.type === 'text' || block.type === 'image') parts.push(userPart(block, at, images));
    else if (block.type === 'tool_result') {
      flush();
      out.push(toolMessage(block, at, images));
    } else if (block.type === 'tool_use') refuse(at, 'is a tool_use block in a user message; tool_use blocks belong to assistant messages.');
    else unknownBlock(block, at);
  });
  flush();
  return out;
}

function assistantMessage(blocks: Block[], field: string): ChatMessage {
  const parts: ContentPart[] = [];
  const toolCalls: ToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  blocks.forEach((block, j) => {
    const at = `${field}.${j}`;
    if (block.type === 'text') parts.push(textPart(block, at, ''));
    else if (block.type === 'tool_use') toolCalls.push(toolCallOf(block, at));
    else if (block.type === 'thinking' || block.type === 'redacted_thinking') thinking.push(thinkingOf(block, at));
    else if (block.type === 'image' || block.type === 'tool_result')
      refuse(at, `is an ${block.type} block in an assistant message; send it in a user message.`);
    else unknownBlock(block, at);
  });
  return { role: 'assistant', content: contentOf(parts), ...(toolCalls.length ? { toolCalls } : {}), ...(thinking.length ? { thinking } : {}) };
}

/** A thinking block sent back: kept exactly as it came (the provider checks its signature). */
function thinkingOf(block: Block, field: string): ThinkingBlock {
  if (block.type === 'redacted_thinking') {
    if (block.data === undefined) refuse(`${field}.data`, 'is required in a redacted_thinking block.');
    return { type: 'redacted_thinking', data: block.data };
  }
  if (block.thinking === undefined || block.signature === undefined)
    refuse(field, 'is a thinking block without its thinking and signature; send it back as it came.');
  return { type: 'thinking', thinking: block.thinking, signature: block.signature };
}

function toolCallOf(block: Block, field: string): ToolCall {
  if (!block.id) refuse(`${field}.id`, 'is required in a tool_use block.');
  if (!block.name) refuse(`${field}.name`, 'is required in a tool_use block.');
  const input = block.input ?? {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) refuse(`${field}.input`, 'must be an object (the arguments of the call).');
  return { id: block.id, name: block.name, arguments: JSON.stringify(input) };
}

function toolMessage(block: Block, field: string, images: { count: number }): ChatMessage {
  if (!block.tool_use_id) refuse(`${field}.tool_use_id`, 'is required in a tool_result block.');
  const result = block.content ?? '';
  const content = typeof result === 'string' ? result : contentOf(result.map((part, k) => userPart(part, `${field}.content.${k}`, images)));
  return { role: 'tool', toolCallId: block.tool_use_id, content, ...(block.is_error !== undefined ? { isError: block.is_error } : {}) };
}

function textPart(block: { type: string; text?: string; cache_control?: Record<string, unknown> | null }, field: string, onlyText: string): ContentPart {
  if (block.type !== 'text') refuse(field, `is a "${block.type}" block; ${onlyText || TAKEN}.`);
  if (block.text === undefined) refuse(`${field}.text`, 'is required in a text block.');
  return { type: 'text', text: block.text, ...cacheOf(block) };
}

/** A text or image block of a user message or a tool result. */
function userPart(
  block: { type: string; text?: string; source?: Source; cache_control?: Record<string, unknown> | null },
  field: string,
  images: { count: number },
): ContentPart {
  if (block.type === 'text') return textPart(block, field, '');
  if (block.type !== 'image') refuse(field, `is a "${block.type}" block; a tool_result holds text and image blocks.`);
  images.count += 1;
  if (images.count > MAX_IMAGES_PER_REQUEST) refuse(field, `is image number ${images.count}; a request may carry at most ${MAX_IMAGES_PER_REQUEST} images.`);
  return imageOf(block.source, `${field}.source`);
}

function imageOf(source: Source | undefined, field: string): ImagePart {
  if (!source) refuse(field, 'is required in an image block.');
  if (source.type === 'base64') {
    if (!source.media_type || source.data === undefined) refuse(field, 'needs media_type and data for a base64 image.');
    return imagePartFromBase64(source.media_type, source.data, field);
  }
  if (source.type === 'url') {
    if (!source.url) refuse(`${field}.url`, 'is required for a url image.');
    return imagePartFromUrl(source.url, `${field}.url`);
  }
  if (source.type === 'file') refuse(field, 'is a Files API file, which this service cannot read; send the image as base64 or an https URL.');
  return refuse(`${field}.type`, `is "${source.type}"; an image source is base64 or url.`);
}
