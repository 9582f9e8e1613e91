import type { FastifyReply, FastifyRequest } from 'fastify';
import { openFramedStream, type SseOptions, type SseStream, type StreamFraming } from '../../platform/http/sse.js';

/** Between two elements, as Google writes them. */
const SEPARATOR = '\r\n,\r\n';

/**
 * `streamGenerateContent` without `alt=sse`, served as Google serves it: one JSON array written as the chunks come,
 * `[` then the first chunk, `\r\n,\r\n` before each further one and `\r\n]` at the end. A client may read it whole
 * with any JSON parser, or element by element as it arrives. It offers the gateway's stream interface, so the same
 * translation (`gemini.stream.ts`) and the same metering feed it as feed the SSE answer.
 *
 * The keep-alive that stops a proxy from closing a quiet stream (a model thinking without showing its thoughts) is a
 * newline: whitespace is valid anywhere between the array's tokens, where an SSE comment would not be. Event names
 * belong to SSE; an element is just the chunk. A non-JSON line (OpenAI's `[DONE]`) has no place in an array, and the
 * Gemini translation never sends one.
 */
const JSON_ARRAY_FRAMING: StreamFraming = {
  contentType: 'application/json; charset=utf-8',
  opening: '[',
  closing: '\r\n]',
  event: (data, _name, index) => `${index === 0 ? '' : SEPARATOR}${JSON.stringify(data)}`,
  keepAlive: () => '\n',
};

export function openJsonArrayStream(request: FastifyRequest, reply: FastifyReply, options: SseOptions = {}): SseStream {
  return openFramedStream(request, reply, JSON_ARRAY_FRAMING, options);
}
