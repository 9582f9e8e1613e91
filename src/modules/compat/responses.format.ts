import { badRequest } from '../../platform/http/errors.js';
import type { ResponseFormat, TextAnswerBody, TextBody, ToolChoice, ToolDefinition } from '../gateway/index.js';
import { flatToolName, keptInput, toChatMessages, type KeptItem, type SourcedItem } from './responses.input.js';
import {
  MAX_TOOL_DESCRIPTION_CHARS,
  ResponseCreateBody,
  type OutputItem,
  type ResponseCreateRequest,
  type ResponseObjectBody,
  type WireNestedTool,
  type WireTool,
} from './responses.schemas.js';
import { OPENAI_HINT_NAMES, reasoningText, unknownFields } from './openai.format.js';
import { packedReasoning, wantsEncryptedReasoning } from './responses.reasoning.js';

/**
 * Responses fields no provider behind this gateway honours: refused by name when they would change the answer (an
 * unset, null, false, empty or default value changes nothing and passes). Declared and read as no-ops, as they change
 * nothing here: `prompt_cache_key` and `prompt_cache_retention` (cache hints), `client_metadata` (the client's trace
 * context), `include` other than logprobs (`reasoning.encrypted_content` is honoured, see responses.reasoning.ts; the
 * others name output always sent or not served), `stream_options` (no obfuscation is added), `truncation` (history
 * is fitted as on chat completions) and `max_tool_calls` (it counts built-in tool calls only). Any other field is unknown: accepted and named in
 * `x-storefront-ignored` (the rule is openai.format.ts's `unknownFields`).
 */
const NOT_CARRIED: Record<string, (value: unknown) => boolean> = {
  background: (v) => v === true,
  include: (v) => Array.isArray(v) && v.includes('message.output_text.logprobs'),
  conversation: (v) => v !== null && v !== undefined,
  prompt: (v) => v !== null && v !== undefined,
  context_management: (v) => Array.isArray(v) && v.length > 0,
  moderation: (v) => v !== null && v !== undefined,
  top_logprobs: (v) => typeof v === 'number' && v > 0,
  service_tier: (v) => typeof v === 'string' && v !== 'auto' && v !== 'default',
};
/** Declared by OpenAI and read past here (see above), though not in ResponseCreateBody. */
const NO_OPS = ['max_tool_calls'];
const DECLARED = [...Object.keys(ResponseCreateBody.properties), ...NO_OPS];

/** Refuses the fields that would change the answer and are not carried; answers the unknown ones' names. */
function uncarried(body: ResponseCreateRequest): string[] {
  const verbosity = body.text?.verbosity && body.text.verbosity !== 'medium' ? ['text.verbosity'] : [];
  return unknownFields(body, DECLARED, NOT_CARRIED, verbosity);
}

/** A namespace's function and the namespace it belongs to, by the name the provider was offered. */
export type ToolNames = ReadonlyMap<string, { namespace: string; name: string }>;

/** A call as the caller named it: a namespace's function answers with its own name and the namespace. */
export function callName(names: ToolNames | undefined, flat: string): { name: string; namespace?: string } {
  return names?.get(flat) ?? { name: flat };
}

interface OfferedTools {
  tools: ToolDefinition[];
  names: Map<string, { namespace: string; name: string }>;
  /** The tools left out, as `tools.<type>`. */
  ignored: string[];
}

/**
 * Function tools in the gateway's terms: a namespace's functions flattened (flatToolName), built-in and custom tools
 * (which the providers here cannot run) left out and named.
 */
function offeredTools(wire: WireTool[]): OfferedTools {
  const tools: ToolDefinition[] = [];
  const names = new Map<string, { namespace: string; name: string }>();
  const ignored = new Set<string>();
  const add = (tool: WireNestedTool, field: string, namespace?: { name: string; description?: string | null }) => {
    if (!tool.name) throw badRequest(`${field} is a function without a name.`, [{ field: `${field}.name`, message: 'is required' }]);
    const name = namespace ? flatToolName(namespace.name, tool.name) : tool.name;
    if (namespace) names.set(name, { namespace: namespace.name, name: tool.name });
    const description = [tool.description, namespace?.description ? `(${namespace.name}: ${namespace.description})` : null]
      .filter(Boolean)
      .join('\n\n')
      .slice(0, MAX_TOOL_DESCRIPTION_CHARS);
    tools.push({
      name,
      ...(description ? { description } : {}),
      parameters: tool.parameters ?? { type: 'object', properties: {} },
      ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
    });
  };
  // Named in a header: a type with other characters than these is named by its place.
  const leftOut = (type: string, field: string) => ignored.add(/^[A-Za-z0-9_-]+$/.test(type) ? `tools.${type}` : field);
  wire.forEach((tool, i) => {
    if (tool.type === 'function') add(tool, `tools.${i}`);
    else if (tool.type === 'namespace') {
      const namespace = tool.name;
      if (!namespace) throw badRequest(`tools[${i}] is a namespace without a name.`, [{ field: `tools.${i}.name`, message: 'is required' }]);
      // The namespace's description goes with its first function only (each copy would be billed as input).
      (tool.tools ?? []).forEach((inner, j) => {
        if (inner.type === 'function') add(inner, `tools.${i}.tools.${j}`, { name: namespace, description: j === 0 ? tool.description : null });
        else leftOut(inner.type, `tools.${i}.tools.${j}`);
      });
    } else leftOut(tool.type, `tools.${i}`);
  });
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name))
      throw badRequest(`Two tools are offered as "${tool.name}"; tool names must be unique.`, [{ field: 'tools', message: `${tool.name} is offered twice` }]);
    seen.add(tool.name);
  }
  return { tools, names, ignored: [...ignored] };
}

function toolChoiceOf(choice: NonNullable<ResponseCreateRequest['tool_choice']>): ToolChoice {
  if (typeof choice === 'string') return choice;
  if (choice.type !== 'function') {
    throw badRequest(`tool_choice names "${choice.type}", which this gateway does not serve; choose auto, none, required or a function.`, [
      { field: 'tool_choice.type', message: 'must be function' },
    ]);
  }
  if (!choice.name) throw badRequest('tool_choice names a function without its name.', [{ field: 'tool_choice.name', message: 'is required' }]);
  return { name: choice.namespace ? flatToolName(choice.namespace, choice.name) : choice.name };
}

function formatOf(format: NonNullable<NonNullable<ResponseCreateRequest['text']>['format']>): ResponseFormat | undefined {
  // `text` is the default: nothing to carry.
  if (format.type !== 'json_schema') return format.type === 'json_object' ? { type: 'json_object' } : undefined;
  const { name, schema, strict, description } = format;
  return { type: 'json_schema', name, schema, ...(strict == null ? {} : { strict }), ...(description ? { description } : {}) };
}

/** What a response answers back of its request (OpenAI echoes these), kept for the stored response too. */
export type ResponseEcho = Pick<
  ResponseObjectBody,
  | 'instructions'
  | 'max_output_tokens'
  | 'metadata'
  | 'parallel_tool_calls'
  | 'previous_response_id'
  | 'store'
  | 'temperature'
  | 'text'
  | 'tool_choice'
  | 'tools'
  | 'top_p'
  | 'truncation'
> & { user?: string };

function echoOf(body: ResponseCreateRequest, offered: ToolDefinition[]): ResponseEcho {
  const user = body.user ?? undefined;
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    store: body.store ?? true,
    temperature: body.temperature ?? null,
    text: { format: body.text?.format ?? { type: 'text' }, ...(body.text?.verbosity ? { verbosity: body.text.verbosity } : {}) },
    tool_choice:
      typeof body.tool_choice === 'object' && body.tool_choice
        ? { type: 'function', name: body.tool_choice.name ?? '', ...(body.tool_choice.namespace ? { namespace: body.tool_choice.namespace } : {}) }
        : (body.tool_choice ?? 'auto'),
    tools: offered.map((tool) => ({
      type: 'function' as const,
      name: tool.name,
      description: tool.description ?? null,
      parameters: tool.parameters,
      strict: tool.strict ?? null,
    })),
    top_p: body.top_p ?? null,
    truncation: body.truncation ?? 'disabled',
    ...(user ? { user } : {}),
  };
}

/** A Responses request as the gateway's text call, with what the response echoes and the input items to keep. */
export interface ResponseCall {
  body: TextBody;
  echo: ResponseEcho;
  inputItems: KeptItem[];
  /** Per gateway message, the request field it came from (for errors). */
  paths: string[];
  /** Namespaced functions by the name the provider was offered, to answer their calls in the caller's terms. */
  names: ToolNames;
  /** Unknown fields and the tools left out, for the x-storefront-ignored header. */
  ignored: string[];
  /** `include` asked for the reasoning items' encrypted_content. */
  encryptedReasoning: boolean;
}

/**
 * The request as the gateway's rich text call: `instructions` as the first system message, then the stored
 * conversation `history` (the chain of `previous_response_id`), then the input. Tool choice and parallel calls go only
 * with tools (without any they change nothing), except a choice that demands a call, which the gateway refuses.
 */
export function toResponseCall(body: ResponseCreateRequest, history: KeptItem[]): ResponseCall {
  const unknown = uncarried(body);
  const offered = offeredTools(body.tools ?? []);
  const tools = offered.tools.length > 0 ? offered.tools : undefined;
  const toolChoice = body.tool_choice == null ? undefined : toolChoiceOf(body.tool_choice);
  const responseFormat = body.text?.format ? formatOf(body.text.format) : undefined;
  const inputItems = keptInput(body.input);
  const sourced: SourcedItem[] = [
    ...(body.instructions
      ? [
          {
            item: { type: 'message', role: 'system', status: 'completed', content: [{ type: 'input_text', text: body.instructions }] } as KeptItem,
            path: 'instructions',
          },
        ]
      : []),
    // A stored answer's reasoning item carries its thinking back to the turn it preceded (toChatMessages).
    ...history.map((item) => ({ item, path: 'previous_response_id' })),
    ...inputItems.map((item, i) => ({ item, path: typeof body.input === 'string' ? 'input' : `input.${i}` })),
  ];
  const { messages, paths } = toChatMessages(sourced);
  if (!messages.some((m) => m.role === 'user'))
    throw badRequest('The conversation has no user message; input must include one.', [{ field: 'input', message: 'must include a user message' }]);
  const user = body.safety_identifier ?? body.user ?? undefined;
  return {
    body: {
      model: body.model,
      messages,
      serverInstruction: false,
      maxTokens: body.max_output_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
      ...(tools ? { tools } : {}),
      ...(toolChoice !== undefined && (tools || (toolChoice !== 'auto' && toolChoice !== 'none')) ? { toolChoice } : {}),
      ...(tools && body.parallel_tool_calls != null ? { parallelToolCalls: body.parallel_tool_calls } : {}),
      ...(responseFormat ? { responseFormat } : {}),
      ...(body.top_p == null ? {} : { topP: body.top_p }),
      ...(user ? { user } : {}),
      // `xhigh` (newer OpenAI models, and Codex CLI) is the gateway's highest level.
      ...(body.reasoning?.effort
        ? { reasoning: { effort: body.reasoning.effort === 'xhigh' ? 'high' : body.reasoning.effort }, reasoningField: 'reasoning' }
        : {}),
      fieldNames: OPENAI_HINT_NAMES,
    },
    echo: echoOf(body, offered.tools),
    inputItems,
    paths,
    names: offered.names,
    ignored: [...unknown, ...offered.ignored],
    encryptedReasoning: wantsEncryptedReasoning(body.include),
  };
}

const hexOf = (requestId: string) => requestId.replaceAll('-', '');
export const responseId = (requestId: string) => `resp_${hexOf(requestId)}`;
export const messageItemId = (requestId: string) => `msg_${hexOf(requestId)}`;
export const reasoningItemId = (requestId: string) => `rs_${hexOf(requestId)}`;
export const callItemId = (requestId: string, index: number) => `fc_${hexOf(requestId)}_${index}`;
/** Ids of the input items the caller sent without one, stable for the request (a replay keeps them). */
const ITEM_PREFIX: Record<KeptItem['type'], string> = { message: 'msg', function_call: 'fc', function_call_output: 'fco', reasoning: 'rs' };
export const inputItemId = (requestId: string, item: KeptItem, index: number) => `${ITEM_PREFIX[item.type]}_${hexOf(requestId)}_in${index}`;

/** The gateway's usage in the Responses shape, with the wallet tokens charged (this service's extension). */
export function responsesUsage(answer: TextAnswerBody): NonNullable<ResponseObjectBody['usage']> {
  const { inputTokens, outputTokens, cachedInputTokens, cacheWriteTokens, cacheWrite1hTokens, reasoningTokens, creditsConsumed } = answer.usage;
  // Cache writes, and of those the 1-hour ones (billed at their own price), as in the chat completions' usage.
  const writes = cacheWriteTokens ? { cache_write_tokens: cacheWriteTokens, ...(cacheWrite1hTokens ? { cache_write_1h_tokens: cacheWrite1hTokens } : {}) } : {};
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cachedInputTokens ?? 0, ...writes },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens ?? 0 },
    total_tokens: inputTokens + outputTokens,
    tokens_charged: creditsConsumed,
  };
}

const INCOMPLETE: Record<string, 'max_output_tokens' | 'content_filter'> = { length: 'max_output_tokens', content_filter: 'content_filter' };

/** A message's parts: its text, then the model's refusal as OpenAI's `refusal` part (a refusal alone has no text part). */
const messageParts = (answer: Pick<TextAnswerBody, 'text' | 'refusal'>) => [
  ...(answer.text || !answer.refusal ? [{ type: 'output_text' as const, text: answer.text, annotations: [] }] : []),
  ...(answer.refusal ? [{ type: 'refusal' as const, refusal: answer.refusal }] : []),
];

/**
 * The answer's output items: its thinking as a reasoning item (when the provider returned any), its summary the text
 * and its encrypted_content the blocks to send back (always here, as a stored response keeps them; shownResponse
 * leaves it out for a caller who did not include it), its text and refusal as one message (when it has either, or
 * nothing else), then each function call.
 */
export function outputItems(
  answer: Pick<TextAnswerBody, 'requestId' | 'text' | 'refusal' | 'toolCalls' | 'finishReason' | 'thinking'>,
  names?: ToolNames,
): OutputItem[] {
  const status = INCOMPLETE[answer.finishReason] ? ('incomplete' as const) : ('completed' as const);
  const calls = answer.toolCalls ?? [];
  const summary = reasoningText(answer.thinking);
  const packed = packedReasoning(answer.thinking);
  return [
    ...(summary || packed
      ? [
          {
            type: 'reasoning' as const,
            id: reasoningItemId(answer.requestId),
            summary: summary ? [{ type: 'summary_text' as const, text: summary }] : [],
            ...(packed ? { encrypted_content: packed } : {}),
          },
        ]
      : []),
    ...(answer.text || answer.refusal || calls.length === 0
      ? [{ type: 'message' as const, id: messageItemId(answer.requestId), role: 'assistant' as const, status, content: messageParts(answer) }]
      : []),
    ...calls.map((call, i) => ({
      type: 'function_call' as const,
      id: callItemId(answer.requestId, i),
      call_id: call.id,
      ...callName(names, call.name),
      arguments: call.arguments,
      status: 'completed' as const,
    })),
  ];
}

/** A response before its answer (the first streaming events carry it). */
export function pendingResponse(requestId: string, model: string, echo: ResponseEcho, createdAt: number): ResponseObjectBody {
  const { user, ...echoed } = echo;
  return {
    id: responseId(requestId),
    object: 'response',
    created_at: createdAt,
    completed_at: null,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    model,
    output: [],
    output_text: '',
    usage: null,
    ...echoed,
    ...(user ? { user } : {}),
  };
}

/** The gateway's answer as a Responses `response` object. */
export function toResponse(answer: TextAnswerBody, echo: ResponseEcho, createdAt: number, completedAt: number, names?: ToolNames): ResponseObjectBody {
  const reason = INCOMPLETE[answer.finishReason];
  return {
    ...pendingResponse(answer.requestId, answer.model, echo, createdAt),
    completed_at: completedAt,
    status: reason ? 'incomplete' : 'completed',
    incomplete_details: reason ? { reason } : null,
    output: outputItems(answer, names),
    output_text: answer.text,
    usage: responsesUsage(answer),
  };
}
