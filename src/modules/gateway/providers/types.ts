/**
 * The contract every upstream adapter implements. Adapters speak one provider's wire format and nothing else:
 * no wallet, no catalog, no pool. The pool hands them one account's credential per attempt.
 */

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** An image in a message: inline bytes (base64) or a public https URL the provider fetches itself. */
export type ImageSource = { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string };

export interface ImagePart {
  type: 'image';
  source: ImageSource;
  /** OpenAI's detail level (other providers ignore it). */
  detail?: 'auto' | 'low' | 'high';
  /** Pixel size when the gateway could read it (inline images), for estimates and the built-in model. */
  width?: number;
  height?: number;
}

/** Anthropic's prompt-caching marker, passed through unchanged to providers that take it. */
export type CacheControl = Record<string, unknown>;

export type ContentPart = { type: 'text'; text: string; cacheControl?: CacheControl } | ImagePart;

/** A call of one of the request's tools, as the model wrote it: `arguments` is JSON text (possibly invalid JSON). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A block of an Anthropic model's extended thinking, kept as the provider wrote it: its `signature` (or a redacted
 * block's `data`) must come back intact on the next turn, or the provider refuses a tool-use follow-up.
 */
export type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high';

/**
 * How hard the model should think: an effort level (OpenAI-style providers) or a token budget (Anthropic). The
 * gateway sends each model one of the two, translated (`reasoning.ts`).
 */
export interface ReasoningOption {
  effort?: ReasoningEffort;
  budgetTokens?: number;
}

/**
 * One message of a conversation. `content` is the text, or the parts in order when the message has images (or
 * parts with cache markers). An assistant message may carry `toolCalls` (its content may then be empty); a `tool`
 * message is the result of the call named by `toolCallId`.
 */
export interface ChatMessage {
  role: ChatRole;
  content: string | ContentPart[];
  toolCalls?: ToolCall[];
  toolCallId?: string;
  /** Anthropic's `is_error` of a tool result. */
  isError?: boolean;
  /** An assistant turn's thinking blocks, sent back before its text (Anthropic only; other adapters leave them out). */
  thinking?: ThinkingBlock[];
}

/** A function the model may call: its name, what it does, and its arguments as a JSON schema. */
export interface ToolDefinition {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  /** OpenAI's strict schema adherence. */
  strict?: boolean;
  cacheControl?: CacheControl;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

export type ResponseFormat =
  { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

/** The optional request parameters, by the names the gateway uses (each adapter says which it honours). */
export const TEXT_PARAMETERS = [
  'tools',
  'toolChoice',
  'parallelToolCalls',
  'responseFormat',
  'topP',
  'topK',
  'stop',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'user',
] as const;
export type TextParameter = (typeof TEXT_PARAMETERS)[number];

/** The text of a message (its text parts joined; images and tool calls left out). */
export function messageText(message: Pick<ChatMessage, 'content'>): string {
  if (typeof message.content === 'string') return message.content;
  let text = '';
  for (const part of message.content) if (part.type === 'text') text += text ? `\n${part.text}` : part.text;
  return text;
}

/** The message's images, in order. */
export const messageImages = (message: Pick<ChatMessage, 'content'>): ImagePart[] =>
  typeof message.content === 'string' ? [] : message.content.filter((part): part is ImagePart => part.type === 'image');

/**
 * A call's tokens as the provider reported them. `inputTokens` counts every input token (cache reads and writes
 * included) and `outputTokens` every output token (reasoning included); the classes below are parts of those totals,
 * priced at their own rates when the model lists one (see the catalog's pricing), at the fresh rate otherwise.
 */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`: read from the provider's prompt cache. */
  cachedInputTokens?: number;
  /** Of `inputTokens`: written to the provider's prompt cache (Anthropic), whatever the entry's lifetime. */
  cacheWriteTokens?: number;
  /** Of `cacheWriteTokens`: written to a 1-hour cache entry (Anthropic's `ttl: "1h"`), priced above a 5-minute write. */
  cacheWrite1hTokens?: number;
  /** Of `outputTokens`: spent on reasoning. */
  reasoningTokens?: number;
}

/** Texts to embed, in order; `dimensions` for models that can shorten their vectors. */
export interface EmbeddingRequest {
  model: string;
  input: string[];
  dimensions?: number;
  user?: string;
  signal?: AbortSignal;
}

export interface EmbeddingResult {
  /** One vector per input text, in the input's order. */
  vectors: number[][];
  /** The provider's count; null when it sent none (the gateway counts the input itself). */
  usage: { inputTokens: number } | null;
}

/** One upstream account as an adapter sees it. */
export interface UpstreamCredential {
  /** The provider_accounts row id (stable across instances). */
  accountId: string;
  providerSlug: string;
  apiKey: string | null;
  baseUrl: string | null;
  /** Per-attempt time limit for a whole answer, or for the first byte of a stream. */
  timeoutMs: number;
}

export interface TextRequest {
  /** The provider's own model name (the catalog's `upstreamModel`). */
  model: string;
  messages: ChatMessage[];
  maxTokens: number;
  temperature?: number;
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  topP?: number;
  /** Anthropic's top_k. */
  topK?: number;
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** The end user behind the call, for the provider's abuse monitoring. */
  user?: string;
  /** Set only for models whose catalog entry says how they take it (`capabilities.flags.reasoning`). */
  reasoning?: ReasoningOption;
  signal?: AbortSignal;
}

// `string & {}` keeps the known reasons as suggestions while any provider's own reason passes through.
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error' | (string & {});

export interface TextResult {
  text: string;
  /** The tools the model called (finish reason `tool_calls`). */
  toolCalls?: ToolCall[];
  /** The model's thinking, in order (Anthropic's blocks; a provider's plain reasoning text as one unsigned block). */
  thinking?: ThinkingBlock[];
  /**
   * The model's refusal in its own words, when the provider sends it apart from the text (OpenAI's `message.refusal`;
   * the text is then usually empty). Billed like any output: the provider reports its tokens in the usage.
   */
  refusal?: string;
  /** The provider's own count; null when it sent none (the gateway then counts the text itself). */
  usage: TokenUsage | null;
  finishReason: FinishReason;
}

export type TextStreamEvent =
  | { type: 'text'; delta: string }
  /** A piece of tool call `index` (0-based, in the answer's order): its id and name come first, then argument text. */
  | { type: 'tool_call'; index: number; id?: string; name?: string; argumentsDelta: string }
  /** A piece of thinking block `index`: its text, its signature (sent once, at its end) or a redacted block's data. */
  | { type: 'thinking'; index: number; delta?: string; signature?: string; redactedData?: string }
  /** A piece of the model's refusal (OpenAI's streamed `delta.refusal`), never part of the text. */
  | { type: 'refusal'; delta: string }
  | { type: 'usage'; usage: TokenUsage }
  | { type: 'finish'; finishReason: FinishReason };

/**
 * An opened stream: the upstream accepted the call (HTTP status checked), events follow.
 * Iterating may throw an UpstreamError when the stream breaks midway.
 */
export interface TextStream extends AsyncIterable<TextStreamEvent> {
  /** Stops reading and cancels the upstream call. */
  abort(): void;
}

export interface ProviderAdapter {
  /** `local`, `openai` (OpenAI-compatible) or `anthropic`. */
  readonly kind: string;
  /** Whether accounts of this adapter need an API key. */
  readonly needsCredential: boolean;
  /** The optional parameters this adapter carries to its provider; any other is refused with a 400 naming it. */
  readonly parameters: ReadonlySet<TextParameter>;
  /**
   * What it carries for one upstream model, when a model family cannot take all of its provider's parameters (OpenAI's
   * reasoning models refuse stop and the penalties): `parameters` less those. Without it, `parameters` for every model.
   */
  parametersFor?(upstreamModel: string): ReadonlySet<TextParameter>;
  /** Whether it carries image parts (the model must also list VISION) and JSON-schema answers. */
  readonly images: boolean;
  readonly jsonSchema: boolean;
  generateText(credential: UpstreamCredential, request: TextRequest): Promise<TextResult>;
  /** Resolves once the upstream answered with a successful status; failures before that reject (and fail over). */
  streamText(credential: UpstreamCredential, request: TextRequest): Promise<TextStream>;
  /** A cheap authenticated call proving the credential works (e.g. listing models). Throws UpstreamError. */
  checkCredential(credential: UpstreamCredential): Promise<void>;
  /** For keys made of parts: throws an Error naming what is missing (the service refuses to start with it). */
  checkKeyShape?(apiKey: string): void;
  /** Embeddings, for adapters whose provider serves them. */
  embed?(credential: UpstreamCredential, request: EmbeddingRequest): Promise<EmbeddingResult>;
}

/**
 * What went wrong upstream, classified for the pool:
 * - `auth`: the account's key is invalid or not allowed (401, 403 about the key) -> fail over; the account is broken.
 * - `rate_limit`: 429 -> fail over; the account is exhausted for now.
 * - `server`: 5xx / overloaded -> fail over.
 * - `timeout`, `network`: no answer in time / could not connect -> fail over.
 * - `model_refused`: 403 for this one model -> 400 to the caller, never retried.
 * - `model_not_found`: the provider does not know the model -> 503 MODEL_UNAVAILABLE.
 * - `bad_request`: the provider rejected the request itself (400/413/422, content filter) -> 400 to the caller.
 * - `aborted`: we cancelled it.
 */
export type UpstreamErrorKind = 'auth' | 'rate_limit' | 'server' | 'timeout' | 'network' | 'model_refused' | 'model_not_found' | 'bad_request' | 'aborted';

export class UpstreamError extends Error {
  constructor(
    readonly kind: UpstreamErrorKind,
    message: string,
    readonly status: number | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }

  /** Whether another account of the same provider may succeed where this one failed. */
  get accountFailure(): boolean {
    return this.kind === 'auth' || this.kind === 'rate_limit' || this.kind === 'server' || this.kind === 'timeout' || this.kind === 'network';
  }

  toDetails(): { code: string; status: number | null; message: string } {
    return { code: this.code ?? this.kind, status: this.status, message: this.message };
  }
}

/**
 * Classifies an upstream HTTP error status. A 403 is a refusal of one model when the provider's message or code is
 * about the model; otherwise the key itself is not allowed.
 */
export function classifyStatus(status: number, code: string | null, message: string, model: string): UpstreamErrorKind {
  if (status === 401) return 'auth';
  // 402: the account ran out of prepaid credit at the provider; another account may still have some.
  if (status === 402) return 'rate_limit';
  if (status === 403) {
    const text = `${code ?? ''} ${message}`.toLowerCase();
    const aboutModel = text.includes('model') || (model.length > 0 && text.includes(model.toLowerCase()));
    return aboutModel ? 'model_refused' : 'auth';
  }
  if (status === 404) {
    const text = `${code ?? ''} ${message}`.toLowerCase();
    // A 404 about the model means the provider does not serve it; any other 404 is a misconfigured account (base URL).
    return text.includes('model') ? 'model_not_found' : 'server';
  }
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limit';
  if (status >= 500) return 'server';
  return 'bad_request';
}
