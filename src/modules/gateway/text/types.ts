import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../../../platform/auth/plugin.js';
import type { ServerTiming } from '../../../platform/http/server-timing.js';
import type { Db } from '../../../platform/db/database.js';
import type { OutboundPolicy } from '../../../platform/net/outbound-policy.js';
import type { CatalogService, GatewayModel } from '../../catalog/service.js';
import type { WalletService } from '../../wallet/service.js';
import type { Access, AccessDeps } from '../metering/access.js';
import type { IdempotencyStore } from '../metering/idempotency.js';
import type { Metering } from '../metering/metering.js';
import type { Metered } from '../metering/types.js';
import type { ChatMessage, ReasoningOption, TextRequest, ThinkingBlock, ToolCall } from '../providers/types.js';
import type { CallSpan } from '../routing/call-span.js';
import type { Fallbacks } from '../routing/fallback-models.js';
import type { UpstreamPool } from '../routing/pool.js';
import type { EnhanceTarget } from './instructions.js';

/** What the text gateway calls: the catalog, the plan checks (`AccessDeps`), the metering, the pool, the Idempotency-Keys. */
export interface TextGatewayDeps extends AccessDeps {
  db: Db;
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'estimateTokens' | 'priceUsage' | 'getById'>;
  wallet: Pick<WalletService, 'markInFlight'>;
  metering: Metering;
  pool: UpstreamPool;
  idempotency: IdempotencyStore;
  /** Where image URLs in messages may point (the provider fetches them). */
  outbound?: Pick<OutboundPolicy, 'check'>;
  /** Operators' fallback models: tried in order when every account of the model's provider failed. */
  fallbacks?: Pick<Fallbacks, 'idsOf'>;
  /** Prompts and answers on the call's span (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`). */
  captureContent?: boolean;
}

/**
 * The hints: the sampling ones shape how tokens are drawn, `user` only tags the call for the provider's abuse
 * monitoring and `parallelToolCalls: true` allows what a model does anyway, never what the answer must be, so one a
 * model cannot take is left out of its call and named in `x-storefront-ignored` (capabilities.ts has the policy).
 */
export type Hint = 'temperature' | 'topP' | 'topK' | 'user' | 'parallelToolCalls';

/** The reasoning control as the caller's surface gave it. */
export interface TextReasoning extends ReasoningOption {
  /**
   * The call's maxTokens caps the whole output, thinking included, and a thinking budget is fitted under it: Anthropic's
   * max_tokens, set by its surface. Without it a budget is added to maxTokens (the gateway's documented rule).
   */
  withinMaxTokens?: boolean;
}

/**
 * The optional parameters of a text call: carried to adapters that honour them; a sampling hint one cannot take is left
 * out, any other parameter refused with a 400. `fieldNames` says what the caller's surface calls the sampling hints,
 * for the header (default: the gateway's own names, as `POST /v1/ai/text` takes them); it never goes upstream.
 */
export type TextOptions = Pick<
  TextRequest,
  'tools' | 'toolChoice' | 'parallelToolCalls' | 'responseFormat' | 'topP' | 'topK' | 'stop' | 'seed' | 'presencePenalty' | 'frequencyPenalty' | 'user'
> & {
  reasoning?: TextReasoning;
  fieldNames?: Partial<Record<Hint, string>>;
};

export interface TextCall {
  operation: 'text.generate' | 'prompt.enhance';
  modelSlug: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  options?: TextOptions;
  /** Which model types the route accepts, and the 400 to give otherwise. */
  accepts: (model: GatewayModel) => string | null;
  /** The instruction placed first (default: the per-type server instruction; null: none, the messages go as they are). */
  instruction?: string | null;
  /** Save the answer to the caller's text history. */
  saveToHistory: boolean;
  /** The reasoning control's name on the caller's surface, for the `x-storefront-ignored` header (default `reasoning`). */
  reasoningField?: string;
  /** The request's Server-Timing: the call adds `route`, `reserve`, `upstream` (and `upstream-ttfb`) and `settle`. */
  timing?: ServerTiming;
}

/** The JSON answer of a text call (and what its Idempotency-Key replays), built once by its settlement (text.ts). */
export type TextAnswer = {
  text: string;
  /** The tools the model called (finish reason `tool_calls`); absent when it called none. */
  toolCalls?: ToolCall[];
  /** The model's thinking blocks, when the provider sent any (never part of `text`). */
  thinking?: ThinkingBlock[];
  /** The model's refusal in its own words, when its provider sent one apart from the text (see TextResult.refusal). */
  refusal?: string;
  /** Request fields the model cannot take that were left out rather than refused (sampling hints, the reasoning control), as the caller named them. */
  ignored?: string[];
  /** The totals and what they were charged; the token classes the provider reported, when non-zero. */
  usage: {
    inputTokens: number;
    outputTokens: number;
    creditsConsumed: number;
    cachedInputTokens?: number;
    cacheWriteTokens?: number;
    cacheWrite1hTokens?: number;
    reasoningTokens?: number;
  };
  model: string;
  requestId: string;
  finishReason: string;
};

/** The body of a text call as the routes and the SDK-compatible surfaces hand it to the gateway. */
export interface TextBody extends TextOptions {
  model: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  stream?: boolean;
  /** false: the caller's messages go upstream as they are (the SDK-compatible surfaces); default: the spec's server instruction first. */
  serverInstruction?: boolean;
  /** The reasoning control's name on the caller's surface (`reasoning_effort`, `thinking`...), named when it is left out. */
  reasoningField?: string;
}

export interface EnhanceBody {
  model: string;
  prompt: string;
  target?: EnhanceTarget;
}

export interface CallOptions {
  idempotencyKey?: string;
  /** The request's Server-Timing, which the call adds its phases to. */
  timing?: ServerTiming;
}

/** A text call checked, sized and reserved: what the upstream call and its billing work from. */
export interface Prepared {
  call: TextCall;
  principal: Principal;
  model: GatewayModel;
  metered: Metered;
  requestId: string;
  messages: ChatMessage[];
  maxTokens: number;
  inputTokens: number;
  trimmedMessages: number;
  reservedTokens: number;
  /** The reasoning control in the model's terms (absent: none is sent). */
  reasoning?: ReasoningOption;
  /** What was left out (see TextAnswer.ignored). */
  ignored?: string[];
  /** The sampling hints left out of the upstream call (the prepared call decides; adapters send what they are given). */
  leftOut?: Hint[];
  started: number;
  /** The model the caller asked for, when a fallback serves the call instead. */
  fallbackFrom?: { model: string; error: unknown };
  /** The call's GenAI span (routing/call-span.ts). */
  span: CallSpan;
}

export type Sizing = Pick<
  Prepared,
  'model' | 'messages' | 'maxTokens' | 'inputTokens' | 'trimmedMessages' | 'reservedTokens' | 'reasoning' | 'ignored' | 'leftOut'
> & { access: Access };
