import type { Static } from 'typebox';
import {
  imagePartFromBase64,
  imagePartFromUrl,
  MAX_IMAGES_PER_REQUEST,
  type ChatMessage,
  type ContentPart,
  type ThinkingBlock,
  type ToolCall,
} from '../gateway/index.js';
import { contentOf, refuse } from './anthropic.content.js';
import type { Content } from './gemini.schemas.js';
import { thinkingOfSignature } from './gemini.signature.js';

type GeminiContent = Static<typeof Content>;
type Part = GeminiContent['parts'][number];

const KNOWN_KINDS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse'];

/** The kind of a part (the one field among text, inlineData, ... it sets), or a 400 naming an unknown one. */
function kindOf(part: Part, field: string): string {
  const kind = KNOWN_KINDS.find((name) => (part as Record<string, unknown>)[name] !== undefined);
  if (kind) return kind;
  const other = Object.keys(part).find((name) => !['thought', 'thoughtSignature'].includes(name));
  return refuse(
    field,
    `is a "${other ?? 'empty'}" part, which this service cannot pass on; send text, inlineData, fileData, functionCall or functionResponse parts.`,
  );
}

/**
 * Gemini's contents as the gateway's conversation, in order. A model turn's `functionCall` parts become its tool
 * calls (an id is made up when the caller's has none); a user turn's `functionResponse` parts become `tool` messages,
 * matched to the call by id, or else by name to the earliest unanswered call of that name. Consecutive model contents
 * are one turn: a streamed answer kept chunk by chunk (as `@google/genai`'s chats keep it) comes back that way, and
 * its thinking must lead the whole turn.
 */
export function toChatMessages(contents: GeminiContent[]): ChatMessage[] {
  const images = { count: 0 };
  const unanswered: ToolCall[] = [];
  const out: ChatMessage[] = [];
  let turn: ModelTurn | null = null;
  const closeTurn = () => {
    if (!turn) return;
    const message = assistantMessage(turn);
    unanswered.splice(0, unanswered.length, ...(message.toolCalls ?? []));
    if (message.toolCalls?.length || message.content !== '') out.push(message);
    turn = null;
  };
  contents.forEach((content, i) => {
    const field = `contents.${i}`;
    if (content.role === 'model') {
      turn ??= { text: '', toolCalls: [], signatures: new Set(), thinking: [] };
      readModelParts(turn, content.parts, field, i);
    } else if (content.role === undefined || content.role === 'user' || content.role === 'function') {
      closeTurn();
      out.push(...userMessages(content.parts, field, images, unanswered));
    } else refuse(`${field}.role`, `is "${content.role}"; a content's role is user or model.`);
  });
  closeTurn();
  return out;
}

/** A model turn being read: its text (parts joined as Gemini joins them, with nothing between), calls and thinking. */
interface ModelTurn {
  text: string;
  toolCalls: ToolCall[];
  signatures: Set<string>;
  thinking: ThinkingBlock[];
}

function assistantMessage(turn: ModelTurn): ChatMessage {
  return {
    role: 'assistant',
    content: turn.text,
    ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}),
    ...(turn.thinking.length ? { thinking: turn.thinking } : {}),
  };
}

function readModelParts(turn: ModelTurn, parts: Part[], field: string, index: number): void {
  parts.forEach((part, j) => {
    const at = `${field}.parts.${j}`;
    readSignature(turn, part.thoughtSignature, `${at}.thoughtSignature`);
    // A part holding only a thought flag or a signature (some backends close a thought with one) says nothing.
    const keys = Object.keys(part);
    if (keys.length > 0 && keys.every((name) => name === 'thought' || name === 'thoughtSignature')) return;
    const kind = kindOf(part, at);
    if (kind === 'text') {
      // Thought summaries are the model's own notes; they are not part of what it said.
      if (!part.thought) turn.text += part.text!;
    } else if (kind === 'functionCall') {
      const call = part.functionCall!;
      const args = call.args ?? {};
      if (typeof args !== 'object' || args === null || Array.isArray(args)) refuse(`${at}.functionCall.args`, 'must be an object (the arguments of the call).');
      turn.toolCalls.push({ id: call.id || `call_${index}_${j}_${call.name}`, name: call.name, arguments: JSON.stringify(args) });
    } else refuse(at, `is a ${kind} part in a model turn; send it in a user turn.`);
  });
}

/**
 * The thinking a signature of ours carries (`gemini.signature.ts`); a client may copy one signature onto several
 * parts, so each is read once. A signature made elsewhere (a history begun with Google) is left out: nothing here
 * can use it, and the turn stands without it for a model that does not think in signed blocks.
 */
function readSignature(turn: ModelTurn, signature: string | undefined, field: string): void {
  if (signature === undefined || turn.signatures.has(signature)) return;
  turn.signatures.add(signature);
  turn.thinking.push(...(thinkingOfSignature(signature, field) ?? []));
}

function userMessages(parts: Part[], field: string, images: { count: number }, unanswered: ToolCall[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pending: ContentPart[] = [];
  const flush = () => {
    if (pending.length > 0) out.push({ role: 'user', content: contentOf(pending) });
    pending = [];
  };
  parts.forEach((part, j) => {
    const at = `${field}.parts.${j}`;
    const kind = kindOf(part, at);
    if (kind === 'text') pending.push({ type: 'text', text: part.text! });
    else if (kind === 'inlineData' || kind === 'fileData') pending.push(imageOf(part, at, images));
    else if (kind === 'functionResponse') {
      flush();
      out.push(toolMessage(part.functionResponse!, at, unanswered));
    } else refuse(at, 'is a functionCall part in a user turn; functionCall parts belong to model turns.');
  });
  flush();
  return out;
}

function toolMessage(response: NonNullable<Part['functionResponse']>, field: string, unanswered: ToolCall[]): ChatMessage {
  const index = unanswered.findIndex((call) => (response.id ? call.id === response.id : call.name === response.name));
  if (index < 0) {
    refuse(
      `${field}.functionResponse`,
      `answers "${response.id ?? response.name}", which no functionCall of the model turn before it made; send the model turn with its functionCall parts first.`,
    );
  }
  const [call] = unanswered.splice(index, 1);
  const result = response.response ?? {};
  return { role: 'tool', toolCallId: call!.id, content: typeof result === 'string' ? result : JSON.stringify(result) };
}

function imageOf(part: Part, field: string, images: { count: number }): ContentPart {
  images.count += 1;
  if (images.count > MAX_IMAGES_PER_REQUEST) refuse(field, `is image number ${images.count}; a request may carry at most ${MAX_IMAGES_PER_REQUEST} images.`);
  if (part.inlineData) return imagePartFromBase64(part.inlineData.mimeType, part.inlineData.data, `${field}.inlineData`);
  const uri = part.fileData!.fileUri;
  if (!/^(https:|data:)/.test(uri))
    refuse(
      `${field}.fileData.fileUri`,
      'is not an https URL; uploaded Gemini files cannot be read here, so send the image inline (inlineData) or as an https URL.',
    );
  return imagePartFromUrl(uri, `${field}.fileData.fileUri`);
}

/** The system instruction's text parts as one system message. */
export function systemMessage(instruction: GeminiContent | string | undefined): ChatMessage | null {
  if (instruction === undefined) return null;
  if (typeof instruction === 'string') return instruction ? { role: 'system', content: instruction } : null;
  const texts = instruction.parts.map((part, j) => {
    if (part.text === undefined) refuse(`systemInstruction.parts.${j}`, 'is not a text part; a system instruction holds text only.');
    return part.text;
  });
  const text = texts.join('\n');
  return text ? { role: 'system', content: text } : null;
}
