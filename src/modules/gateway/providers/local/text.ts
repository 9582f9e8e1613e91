import { setTimeout as sleep } from 'node:timers/promises';
import { countAnswerTokens, countMessageTokens, countTextTokens, countToolTokens, tokenPieces, truncateToTokens } from '../../text/tokens.js';
import {
  answer,
  describeImages,
  enhance,
  ENHANCE_TARGET_PATTERN,
  imagesToDescribe,
  lastUserMessage,
  seededRandom,
  toolResultsAnswer,
  trailingToolResults,
} from './answers.js';
import { promptFacts } from './prompt-facts.js';
import { checkLocalSchema, schemaInstance } from './schema.js';
import { LocalSchemaLimitError } from './schema-limits.js';
import { chooseTool, toolCallFor } from './tools.js';
import { LOCAL_EMBEDDING_DIMENSIONS, localEmbedding } from './embed.js';
import {
  messageText,
  UpstreamError,
  type ProviderAdapter,
  type TextParameter,
  type TextRequest,
  type TextResult,
  type TextStream,
  type TextStreamEvent,
  type ToolCall,
} from '../types.js';

/**
 * The built-in provider: deterministic text generated offline, so the product works with no credentials.
 * The same request always gives the same answer; token counts are real (o200k_base); streams emit token by token.
 * It follows the gateway's prompt-enhancement instruction (recognised by ENHANCE_TARGET_PATTERN) so enhance works offline,
 * calls tools with arguments valid against their schemas, answers tool results, describes images and writes JSON.
 */
export { ENHANCE_TARGET_PATTERN };

export interface LocalProviderOptions {
  /** Pause between streamed pieces (default 0: pieces are still yielded one event-loop turn apart). */
  chunkDelayMs?: number;
}

/** topP, topK and the penalties are left out: a deterministic model cannot honour them. */
const LOCAL_PARAMETERS: ReadonlySet<TextParameter> = new Set<TextParameter>([
  'tools',
  'toolChoice',
  'parallelToolCalls',
  'responseFormat',
  'stop',
  'seed',
  'user',
]);

/** Tool arguments stream in at most this many pieces after the call's id and name. */
const ARGUMENT_PIECES = 4;

export function createLocalProvider(options: LocalProviderOptions = {}): ProviderAdapter {
  const chunkDelayMs = options.chunkDelayMs ?? 0;

  function generate(request: TextRequest): TextResult {
    if (request.signal?.aborted) throw new UpstreamError('aborted', 'The call was cancelled.');
    const composed = withinSchemaLimits(() => compose(request));
    let text = '';
    let toolCalls: ToolCall[] | undefined;
    let truncated: boolean;
    if (composed.toolCalls) {
      // A real model cut short mid-call leaves its arguments unfinished (invalid JSON) with finish reason `length`.
      const call = composed.toolCalls[0]!;
      const cut = truncateToTokens(call.arguments, Math.max(0, request.maxTokens - countTextTokens(call.name)));
      toolCalls = [{ ...call, arguments: cut.text }];
      truncated = cut.truncated;
    } else {
      const cut = truncateToTokens(cutAtStop(composed.text, request.stop), request.maxTokens);
      text = cut.text;
      truncated = cut.truncated;
    }
    const usage = { inputTokens: inputTokensOf(request), outputTokens: countAnswerTokens(text, toolCalls) };
    return { text, ...(toolCalls ? { toolCalls } : {}), usage, finishReason: truncated ? 'length' : toolCalls ? 'tool_calls' : 'stop' };
  }

  return {
    kind: 'local',
    needsCredential: false,
    parameters: LOCAL_PARAMETERS,
    images: true,
    jsonSchema: true,
    async generateText(_credential, request) {
      return generate(request);
    },
    async streamText(_credential, request) {
      const result = generate(request);
      const controller = new AbortController();
      const signal = request.signal ? AbortSignal.any([request.signal, controller.signal]) : controller.signal;
      const pause = () => (chunkDelayMs > 0 ? sleep(chunkDelayMs) : new Promise<void>((resolve) => setImmediate(resolve)));
      async function* events(): AsyncGenerator<TextStreamEvent> {
        const pieces = tokenPieces(result.text);
        for (let i = 0; i < pieces.length; i += 2) {
          if (signal.aborted) throw new UpstreamError('aborted', 'The stream was cancelled.');
          yield { type: 'text', delta: pieces.slice(i, i + 2).join('') };
          await pause();
        }
        for (const [index, call] of (result.toolCalls ?? []).entries()) {
          if (signal.aborted) throw new UpstreamError('aborted', 'The stream was cancelled.');
          yield { type: 'tool_call', index, id: call.id, name: call.name, argumentsDelta: '' };
          for (const delta of argumentPieces(call.arguments)) {
            await pause();
            if (signal.aborted) throw new UpstreamError('aborted', 'The stream was cancelled.');
            yield { type: 'tool_call', index, argumentsDelta: delta };
          }
        }
        yield { type: 'usage', usage: result.usage! };
        yield { type: 'finish', finishReason: result.finishReason };
      }
      const iterable = events();
      const stream: TextStream = {
        [Symbol.asyncIterator]: () => iterable,
        abort: () => controller.abort(),
      };
      return stream;
    },
    async checkCredential() {
      // needs none
    },
    async embed(_credential, request) {
      if (request.signal?.aborted) throw new UpstreamError('aborted', 'The call was cancelled.');
      const dimensions = request.dimensions ?? LOCAL_EMBEDDING_DIMENSIONS;
      if (dimensions > LOCAL_EMBEDDING_DIMENSIONS) {
        throw new UpstreamError(
          'bad_request',
          `The built-in embedding model makes vectors of at most ${LOCAL_EMBEDDING_DIMENSIONS} dimensions; ask for ${LOCAL_EMBEDDING_DIMENSIONS} or fewer.`,
          400,
          'dimensions_too_large',
        );
      }
      return {
        vectors: request.input.map((text) => localEmbedding(text, dimensions)),
        usage: { inputTokens: request.input.reduce((sum, text) => sum + countTextTokens(text), 0) },
      };
    },
  };
}

/** The schemas of a request, each with the field it came in and how to name it in a refusal. */
function schemasOf(request: Pick<TextRequest, 'tools' | 'responseFormat'>) {
  const format = request.responseFormat;
  return [
    ...(request.tools ?? []).map((tool) => ({ field: 'tools', subject: `The schema of the tool "${tool.name}"`, schema: tool.parameters })),
    ...(format?.type === 'json_schema' ? [{ field: 'responseFormat', subject: 'The response_format schema', schema: format.schema }] : []),
  ];
}

const refusalMessage = (subject: string, err: LocalSchemaLimitError) => `${subject} ${err.problem}; ${err.remedy}, or choose another model.`;

/**
 * The first of a request's schemas that the built-in model would not follow (LOCAL_SCHEMA_LIMITS), for the gateway to
 * refuse before anything is reserved. Every tool is checked, not only the one the prompt would pick, so whether a
 * request is taken does not depend on its wording.
 */
export function localSchemaRefusal(request: Pick<TextRequest, 'tools' | 'responseFormat'>): { field: string; message: string; limit: string } | undefined {
  const tally = { values: 0 };
  for (const { field, subject, schema } of schemasOf(request)) {
    try {
      checkLocalSchema(schema, tally);
    } catch (err) {
      if (!(err instanceof LocalSchemaLimitError)) throw err;
      const together = err.limit === 'requestValues';
      return { field, message: refusalMessage(together ? 'The schemas of the request (tools and response_format)' : subject, err), limit: err.limit };
    }
  }
  return undefined;
}

/** A schema past the limits that reached the model anyway is the caller's 400, never a 500. */
function withinSchemaLimits<T>(compose: () => T): T {
  try {
    return compose();
  } catch (err) {
    if (err instanceof LocalSchemaLimitError) throw new UpstreamError('bad_request', refusalMessage("The request's JSON schema", err), 400, 'schema_too_large');
    throw err;
  }
}

/** What the model reads: the messages, the tool definitions and the answer's JSON schema (as the gateway estimates). */
function inputTokensOf(request: TextRequest): number {
  const format = request.responseFormat;
  const schemaTokens = format?.type === 'json_schema' ? countTextTokens(JSON.stringify(format.schema)) : 0;
  return countMessageTokens(request.messages) + countToolTokens(request.tools) + schemaTokens;
}

/** The text up to the first occurrence of any stop string (which is left out, as providers do). */
function cutAtStop(text: string, stop: readonly string[] | undefined): string {
  let end = text.length;
  for (const sequence of stop ?? []) {
    const at = sequence ? text.indexOf(sequence) : -1;
    if (at >= 0 && at < end) end = at;
  }
  return text.slice(0, end);
}

function argumentPieces(args: string): string[] {
  const tokens = tokenPieces(args);
  const size = Math.max(1, Math.ceil(tokens.length / ARGUMENT_PIECES));
  const pieces: string[] = [];
  for (let i = 0; i < tokens.length; i += size) pieces.push(tokens.slice(i, i + size).join(''));
  return pieces;
}

/**
 * The answer: a tool call when tools are offered (and the conversation does not end with tool results), else text
 * (JSON when a response format asks for it). A seed, when given, changes the text and nothing else of the request.
 */
function compose(request: TextRequest): { text: string; toolCalls?: ToolCall[] } {
  const { model, messages } = request;
  const prompt = lastUserMessage(messages);
  const results = trailingToolResults(messages);
  if (results.length === 0) {
    const tool = chooseTool(request.tools, request.toolChoice, prompt);
    if (tool) return { text: '', toolCalls: [toolCallFor(tool, prompt, model, messages, request.seed)] };
  }
  const format = request.responseFormat;
  if (format?.type === 'json_schema') return { text: JSON.stringify(schemaInstance(format.schema, promptFacts(prompt))) };

  // Without a seed the seed text is exactly the original one, so plain answers stay as they always were.
  const conversation = `${model}\u0000${JSON.stringify(messages)}`;
  const random = seededRandom(request.seed === undefined ? conversation : `${conversation}\u0000seed=${request.seed}`);
  let text: string;
  const target = ENHANCE_TARGET_PATTERN.exec(
    messages
      .filter((m) => m.role === 'system')
      .map(messageText)
      .join('\n'),
  )?.[1];
  if (results.length > 0) text = toolResultsAnswer(messages, results);
  else if (target) text = enhance(prompt, target, random);
  else {
    const images = imagesToDescribe(messages);
    text = images.length === 0 ? answer(prompt, random) : prompt ? `${describeImages(images)} ${answer(prompt, random)}` : describeImages(images);
  }
  return format?.type === 'json_object' ? { text: JSON.stringify({ answer: text }) } : { text };
}
