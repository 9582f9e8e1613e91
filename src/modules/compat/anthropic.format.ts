import type { Static } from 'typebox';
import type { DescribedError } from '../../platform/http/error-handler.js';
import type { TextAnswerBody, TextBody } from '../gateway/index.js';
import type { Message, MessagesBody } from './anthropic.schemas.js';

export type MessagesRequest = Static<typeof MessagesBody>;

const textOf = (content: MessagesRequest['system']) => (content === undefined ? '' : typeof content === 'string' ? content : content.map((b) => b.text).join('\n'));

/** An Anthropic Messages request as the gateway's text call (`system` becomes the first message). */
export function toTextBody(body: MessagesRequest): TextBody {
  const system = textOf(body.system);
  return {
    model: body.model,
    messages: [...(system ? [{ role: 'system' as const, content: system }] : []), ...body.messages.map((m) => ({ role: m.role, content: textOf(m.content) }))],
    maxTokens: body.max_tokens,
    temperature: body.temperature ?? undefined,
  };
}

export const messageId = (requestId: string) => `msg_${requestId}`;
export const stopReason = (finishReason: string | undefined) => (finishReason === 'length' ? 'max_tokens' : 'end_turn');

export const anthropicUsage = (answer: TextAnswerBody) => ({ input_tokens: answer.usage.inputTokens, output_tokens: answer.usage.outputTokens, tokens_charged: answer.usage.creditsConsumed });

export function toMessage(answer: TextAnswerBody): Static<typeof Message> {
  return {
    id: messageId(answer.requestId),
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content: [{ type: 'text', text: answer.text }],
    stop_reason: stopReason(answer.finishReason),
    stop_sequence: null,
    usage: anthropicUsage(answer),
  };
}

/** Anthropic's error type for one of our statuses. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** A gateway error (same status) in Anthropic's shape. */
export const toAnthropicError = (error: DescribedError) => ({ type: 'error' as const, error: { type: anthropicErrorType(error.status), message: error.message } });
