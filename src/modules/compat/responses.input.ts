import { createHash } from 'node:crypto';
import { badRequest } from '../../platform/http/errors.js';
import { imagePartFromUrl, unpackThinking, type ChatMessage, type ContentPart, type ThinkingBlock } from '../gateway/index.js';
import type { WireInputItem, WireInputPart } from './responses.schemas.js';

/**
 * The name a namespace's function is offered under: `<namespace>__<name>`, within the 64 characters of
 * `^[a-zA-Z0-9_-]+$` every provider takes (a longer one is cut and ends with a hash of the whole).
 */
export function flatToolName(namespace: string, name: string): string {
  const flat = `${namespace}__${name}`.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (flat.length <= 64) return flat;
  return `${flat.slice(0, 55)}_${createHash('sha256').update(flat).digest('hex').slice(0, 8)}`;
}

/** A content part as kept with a stored response and listed by `input_items` (`file_id`: responses.images.ts). */
export type KeptPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string; detail: 'auto' | 'low' | 'high'; file_id?: string }
  | { type: 'output_text'; text: string; annotations: unknown[] }
  | { type: 'refusal'; refusal: string };

/** An input (or output) item in the Responses wire shape, checked: the only kinds the gateway can carry. */
export type KeptItem =
  | { type: 'message'; id?: string; role: 'user' | 'system' | 'developer' | 'assistant'; status: 'completed'; content: KeptPart[] }
  | { type: 'function_call'; id?: string; call_id: string; name: string; namespace?: string; arguments: string; status: 'completed' }
  | { type: 'function_call_output'; id?: string; call_id: string; output: string; status: 'completed' }
  /**
   * A reasoning item carrying thinking to send back (packed, responses.reasoning.ts). A stored answer's reasoning item
   * has the same shape, and one stored before encrypted_content was kept has none: it is read past like a summary.
   */
  | { type: 'reasoning'; id?: string; summary: { type: 'summary_text'; text: string }[]; encrypted_content?: string };

/** An item and where it came from (`input.3`, `previous_response_id`), so an error can point at it. */
export interface SourcedItem {
  item: KeptItem;
  path: string;
}

const refuse = (field: string, message: string, short: string) => badRequest(message, [{ field, message: short }]);

function part(raw: WireInputPart, role: string, field: string): KeptPart {
  const text = (): string => {
    if (typeof raw.text !== 'string') throw refuse(`${field}.text`, `${field} is a ${raw.type} part without text.`, 'is required');
    return raw.text;
  };
  if (raw.type === 'input_text') return { type: 'input_text', text: text() };
  if ((raw.type === 'output_text' || raw.type === 'refusal') && role !== 'assistant') {
    throw refuse(
      `${field}.type`,
      `${field} is an ${raw.type} part in a ${role} message; ${raw.type} belongs to assistant messages.`,
      'belongs to assistant messages',
    );
  }
  if (raw.type === 'output_text') return { type: 'output_text', text: text(), annotations: [] };
  if (raw.type === 'refusal') {
    if (typeof raw.refusal !== 'string') throw refuse(`${field}.refusal`, `${field} is a refusal part without refusal text.`, 'is required');
    return { type: 'refusal', refusal: raw.refusal };
  }
  if (raw.type === 'input_image') {
    if (role !== 'user') throw refuse(field, `${field} is an image in a ${role} message; images go in user messages.`, 'image parts belong in user messages');
    if (!raw.image_url) {
      throw refuse(
        `${field}.image_url`,
        `${field} has no image_url: images by file_id are not served here. Send image_url as an https URL or a data: URL.`,
        'is required',
      );
    }
    if (raw.detail === 'original')
      throw refuse(
        `${field}.detail`,
        `${field} asks for detail "original", which this gateway does not carry; use auto, low or high.`,
        'must be auto, low or high',
      );
    return { type: 'input_image', image_url: raw.image_url, detail: raw.detail ?? 'auto' };
  }
  if (raw.type === 'input_file')
    throw refuse(
      `${field}.type`,
      `${field} is an input_file part; files are not carried to models here. Send the file's text as input_text.`,
      'is not supported',
    );
  throw refuse(
    `${field}.type`,
    `${field} is a part of type "${raw.type}", which this gateway does not carry; send input_text or input_image parts.`,
    'is not supported',
  );
}

function contentOf(raw: WireInputItem, role: string, field: string): KeptPart[] {
  if (raw.content == null) throw refuse(`${field}.content`, `${field} is a message without content.`, 'is required');
  if (typeof raw.content === 'string')
    return [role === 'assistant' ? { type: 'output_text', text: raw.content, annotations: [] } : { type: 'input_text', text: raw.content }];
  return raw.content.map((p, j) => part(p, role, `${field}.content.${j}`));
}

/** The text of a function call's output: a string, or its input_text parts joined. */
function outputOf(raw: WireInputItem, field: string): string {
  if (raw.output === undefined) throw refuse(`${field}.output`, `${field} is a function_call_output without output.`, 'is required');
  if (typeof raw.output === 'string') return raw.output;
  return raw.output
    .map((p, j) => {
      if (p.type !== 'input_text' || typeof p.text !== 'string') {
        throw refuse(`${field}.output.${j}`, `${field}.output holds a ${p.type} part; a function call's output is carried as text only.`, 'must be input_text');
      }
      return p.text;
    })
    .join('\n');
}

const required = (value: string | undefined, field: string, what: string): string => {
  if (value === undefined) throw refuse(field, `${what} has no ${field.split('.').at(-1)}.`, 'is required');
  return value;
};

/** One input item checked and put in its kept shape (ids the caller sent are kept). */
function keptItem(raw: WireInputItem, field: string): KeptItem {
  const type = raw.type ?? (raw.role !== undefined ? 'message' : undefined);
  const id = raw.id ? { id: raw.id } : {};
  if (type === 'message') {
    const role = raw.role;
    if (!role) throw refuse(`${field}.role`, `${field} is a message without a role.`, 'is required');
    return { type: 'message', ...id, role, status: 'completed', content: contentOf(raw, role, field) };
  }
  if (type === 'function_call') {
    const what = `${field} (a function_call)`;
    return {
      type: 'function_call',
      ...id,
      call_id: required(raw.call_id, `${field}.call_id`, what),
      name: required(raw.name, `${field}.name`, what),
      ...(raw.namespace ? { namespace: raw.namespace } : {}),
      arguments: required(raw.arguments, `${field}.arguments`, what),
      status: 'completed',
    };
  }
  if (type === 'function_call_output') {
    return {
      type: 'function_call_output',
      ...id,
      call_id: required(raw.call_id, `${field}.call_id`, `${field} (a function_call_output)`),
      output: outputOf(raw, field),
      status: 'completed',
    };
  }
  if (type === undefined)
    throw refuse(field, `${field} has neither type nor role: send a message (role and content), a function_call or a function_call_output.`, 'has no type');
  if (type === 'item_reference') {
    throw refuse(
      `${field}.type`,
      `${field} is an item_reference, which is not served here: send the item itself, or continue a stored response with previous_response_id.`,
      'is not supported',
    );
  }
  throw refuse(
    `${field}.type`,
    `${field} is a ${type} item, which belongs to a built-in tool or feature this gateway does not serve; send message, function_call and function_call_output items.`,
    'is not supported',
  );
}

/** A reasoning item kept with its encrypted_content (checked when the conversation is built); its summary as sent. */
function keptReasoning(raw: WireInputItem & { encrypted_content: string }): KeptItem {
  const summary = (raw.summary ?? []).flatMap((p) =>
    p.type === 'summary_text' && typeof p.text === 'string' ? [{ type: 'summary_text' as const, text: p.text }] : [],
  );
  return { type: 'reasoning', ...(raw.id ? { id: raw.id } : {}), summary, encrypted_content: raw.encrypted_content };
}

/** The request's `input` as checked items: a string is one user message. */
export function keptInput(input: string | WireInputItem[]): KeptItem[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: input }] }];
  // A reasoning item with only its summary holds nothing a provider takes as input: it is read past, not kept.
  return input.flatMap((raw, i) => {
    if (raw.type !== 'reasoning') return [keptItem(raw, `input.${i}`)];
    return typeof raw.encrypted_content === 'string' && raw.encrypted_content !== ''
      ? [keptReasoning({ ...raw, encrypted_content: raw.encrypted_content })]
      : [];
  });
}

/** A message's content; null for an empty assistant message (an answer with no text carries nothing to send back). */
function messageContent({ item, path }: SourcedItem & { item: { type: 'message' } }): ChatMessage['content'] | null {
  const parts = item.content.map((p, j): ContentPart => {
    if (p.type === 'input_image') return imagePartFromUrl(p.image_url, `${path}.content.${j}.image_url`, p.detail);
    return { type: 'text', text: p.type === 'refusal' ? p.refusal : p.text };
  });
  // A text-only message stays a plain string, as chat completions sends it.
  const text = parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('\n') : null;
  if (text === '' && item.role === 'assistant') return null;
  if (text === '') throw refuse(`${path}.content`, `${path} is a ${item.role} message with no text.`, 'must not be empty');
  return text ?? parts;
}

/**
 * Items as the gateway's messages: `developer` is a system message; a function call joins the assistant message
 * before it (its text, or the calls made in the same turn), as providers expect one assistant turn per set of calls;
 * a call's output is a tool message. A reasoning item's thinking goes with the assistant turn that follows it (an
 * answer's items come as reasoning, message, calls); followed by anything else it is dropped, as a turn of thinking
 * alone is not one a provider takes. `paths` tells, per message, the item it came from.
 */
export function toChatMessages(items: SourcedItem[]): { messages: ChatMessage[]; paths: string[] } {
  const messages: ChatMessage[] = [];
  const paths: string[] = [];
  let thinking: ThinkingBlock[] = [];
  const withThinking = (message: ChatMessage): ChatMessage => {
    if (thinking.length > 0) message.thinking = [...(message.thinking ?? []), ...thinking];
    thinking = [];
    return message;
  };
  for (const sourced of items) {
    const { item, path } = sourced;
    const last = messages.at(-1);
    if (item.type === 'reasoning') {
      if (item.encrypted_content) thinking.push(...unpackThinking(item.encrypted_content, `${path}.encrypted_content`));
      continue;
    }
    if (item.type === 'function_call') {
      // A namespace's function goes by the name it was offered under (responses.format.ts).
      const call = { id: item.call_id, name: item.namespace ? flatToolName(item.namespace, item.name) : item.name, arguments: item.arguments };
      if (last?.role === 'assistant') withThinking(last).toolCalls = [...(last.toolCalls ?? []), call];
      else {
        messages.push(withThinking({ role: 'assistant', content: '', toolCalls: [call] }));
        paths.push(path);
      }
      continue;
    }
    if (item.type === 'function_call_output') {
      thinking = [];
      messages.push({ role: 'tool', content: item.output, toolCallId: item.call_id });
    } else {
      const content = messageContent({ item, path });
      // An empty assistant message leaves its thinking to the calls that follow it.
      if (content === null) continue;
      if (item.role !== 'assistant') thinking = [];
      messages.push(withThinking({ role: item.role === 'developer' ? 'system' : item.role, content }));
    }
    paths.push(path);
  }
  return { messages, paths };
}
