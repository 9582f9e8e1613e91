import type { Static } from 'typebox';
import { badRequest } from '../../../platform/http/errors.js';
import { imagePartFromUrl } from '../text/image-input.js';
import type { ChatMessage, ContentPart } from '../providers/types.js';
import type { TextBody as TextBodySchema } from './text.schemas.js';
import type { TextBody } from '../text/types.js';

type WireBody = Static<typeof TextBodySchema>;
type WireMessage = WireBody['messages'][number];

/** One message of `POST /v1/ai/text` in the gateway's terms: image parts read, the roles' rules checked. */
function toMessage(message: WireMessage, index: number): ChatMessage {
  const field = `messages.${index}`;
  if (message.role === 'tool' && !message.toolCallId) {
    throw badRequest(`messages[${index}] is a tool result without toolCallId; name the call it answers.`, [
      { field: `${field}.toolCallId`, message: 'is required on a tool message' },
    ]);
  }
  if (message.role !== 'tool' && message.toolCallId) {
    throw badRequest(`messages[${index}] has a toolCallId but is not a tool message.`, [
      { field: `${field}.toolCallId`, message: 'belongs on tool messages only' },
    ]);
  }
  if (message.toolCalls && message.role !== 'assistant') {
    throw badRequest(`messages[${index}] carries toolCalls; only an assistant message can.`, [
      { field: `${field}.toolCalls`, message: 'belongs on assistant messages only' },
    ]);
  }
  if (message.thinking?.length && message.role !== 'assistant') {
    throw badRequest(`messages[${index}] carries thinking; only an assistant message can (send it back on the answer it came with).`, [
      { field: `${field}.thinking`, message: 'belongs on assistant messages only' },
    ]);
  }
  const empty = typeof message.content === 'string' ? message.content.length === 0 : false;
  if (empty && !message.toolCalls) throw badRequest(`messages[${index}] has no content.`, [{ field: `${field}.content`, message: 'must not be empty' }]);
  const content: ChatMessage['content'] =
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part, p): ContentPart => (part.type === 'text' ? part : imagePartFromUrl(part.url, `${field}.content.${p}.url`, part.detail)));
  // An unsigned block (a provider's plain reasoning text) is left out: a provider that verifies thinking refuses it.
  const thinking = message.thinking?.filter((block) => block.type === 'redacted_thinking' || block.signature !== '') ?? [];
  return {
    role: message.role,
    content,
    ...(message.toolCalls ? { toolCalls: message.toolCalls } : {}),
    ...(message.toolCallId ? { toolCallId: message.toolCallId } : {}),
    ...(thinking.length ? { thinking } : {}),
  };
}

/** The body of `POST /v1/ai/text` (the spec's fields and the documented extensions) as the gateway's text body. */
export function fromTextRoute(body: WireBody): TextBody {
  if (!body.messages.some((m) => m.role === 'user')) {
    throw badRequest('messages must include at least one user message.', [{ field: 'messages', message: 'must include a user message' }]);
  }
  return Object.assign({}, body, { messages: body.messages.map(toMessage) });
}
