import type { TextAnswerBody, TextBody } from '../gateway/index.js';
import { badRequest } from '../../platform/http/errors.js';
import type { Static } from 'typebox';
import type { ChatCompletion, ChatCompletionBody } from './openai.schemas.js';

export type ChatCompletionRequest = Static<typeof ChatCompletionBody>;

/** An OpenAI chat request as the gateway's text call (`developer` is a system message; text parts are joined). */
export function toTextBody(body: ChatCompletionRequest): TextBody {
  const messages = body.messages.map((m) => ({
    role: m.role === 'developer' ? ('system' as const) : m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((part) => part.text).join('\n'),
  }));
  const empty = messages.findIndex((m) => !m.content);
  if (empty >= 0) throw badRequest(`messages[${empty}] has no text.`, [{ field: `messages.${empty}.content`, message: 'must not be empty' }]);
  if (!messages.some((m) => m.role === 'user')) throw badRequest('messages must include at least one user message.', [{ field: 'messages', message: 'must include a user message' }]);
  return {
    model: body.model,
    messages,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
  };
}

export const completionId = (requestId: string) => `chatcmpl-${requestId}`;

export const openAiUsage = (answer: TextAnswerBody) => ({
  prompt_tokens: answer.usage.inputTokens,
  completion_tokens: answer.usage.outputTokens,
  total_tokens: answer.usage.inputTokens + answer.usage.outputTokens,
  tokens_charged: answer.usage.creditsConsumed,
});

/** The gateway's answer as OpenAI's `chat.completion`. */
export function toChatCompletion(answer: TextAnswerBody, created: number): Static<typeof ChatCompletion> {
  return {
    id: completionId(answer.requestId),
    object: 'chat.completion',
    created,
    model: answer.model,
    choices: [{ index: 0, message: { role: 'assistant', content: answer.text, refusal: null }, finish_reason: answer.finishReason ?? 'stop', logprobs: null }],
    usage: openAiUsage(answer),
  };
}
