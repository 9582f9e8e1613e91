import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { AppError } from '../../../platform/http/errors.js';

/**
 * The span of one gateway call, named and attributed by the OpenTelemetry GenAI semantic conventions
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): `{gen_ai.operation.name} {gen_ai.request.model}`,
 * kind CLIENT, the request's parameters when it starts, the response model, finish reasons and token usage when it
 * ends, plus Storefront's own attributes (`storefront.*`: tokens charged, the reservation, a fallback taken, cache
 * tokens). The upstream HTTP calls made inside `run` are its children. While tracing is off the span is the API's
 * non-recording one and nothing below builds an attribute.
 *
 * Message content goes on the span only when the operator asked for it (`captureContent`), as `gen_ai.input.messages`
 * and `gen_ai.output.messages`, with anything shaped like a credential masked; headers and keys never do.
 */
export interface CallSpan {
  readonly span: Span;
  /** Runs `fn` with this span as the active one (the upstream call). */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** The call moved to a fallback model. */
  fellBack(toModel: string, providerSlug: string): void;
  /** The call was answered and charged; ends the span. */
  answered(outcome: AnsweredCall): void;
  /** The call failed (refunded); ends the span. */
  failed(err: unknown): void;
}

export interface StartedCall {
  /** `chat`, `embeddings`, or `generate_content` (images, video, speech). */
  operation: 'chat' | 'embeddings' | 'generate_content';
  providerSlug: string;
  /** The catalog slug the caller asked for (the upstream name is the response model's business). */
  model: string;
  requestId: string;
  parameters?: {
    maxTokens?: number;
    temperature?: number;
    topP?: number;
    topK?: number;
    stop?: string | string[];
    seed?: number;
    presencePenalty?: number;
    frequencyPenalty?: number;
  };
  /** The messages as sent, recorded only with `captureContent`. */
  input?: unknown;
  captureContent?: boolean;
  /** The trace context of the request that queued the call (a job), as `traceCarrier` wrote it; default: the active one. */
  parent?: Record<string, string>;
}

export interface AnsweredCall {
  responseModel: string;
  finishReason?: string | null;
  /** Absent for calls not counted in tokens (images priced per image). */
  usage?: { inputTokens: number; outputTokens: number; cachedInputTokens?: number; cacheWriteTokens?: number; reasoningTokens?: number };
  chargedTokens: number;
  /** Attributes of the operation's own (`storefront.images_generated`...). */
  attributes?: Attributes;
  /** The answer (text, tool calls), built and recorded only with `captureContent` (the hot path builds nothing). */
  output?: () => unknown;
}

/** Asked for each time: a tracer kept from before a provider was registered (or replaced) would export nowhere. */
const tracer = () => trace.getTracer('storefront-gateway');

/** The well-known `gen_ai.provider.name` values; other providers go by their catalog slug. */
const PROVIDER_NAMES: Record<string, string> = { google: 'gcp.gemini', mistral: 'mistral_ai', xai: 'x_ai', local: 'storefront.local' };

const CREDENTIAL = /\b(?:sk|pk|rk|sess)[-_][A-Za-z0-9_-]{16,}|\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*|\bAIza[0-9A-Za-z_-]{30,}/g;
/** Content as an attribute: JSON, with anything shaped like a key or bearer token masked. */
export const contentAttribute = (value: unknown): string => JSON.stringify(value).replace(CREDENTIAL, '[redacted]');

/** The active trace context as W3C headers, for work that runs later (a queued job); undefined while tracing is off. */
export function traceCarrier(): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

export function startCallSpan(call: StartedCall): CallSpan {
  const parent = call.parent ? propagation.extract(ROOT_CONTEXT, call.parent) : context.active();
  const span = tracer().startSpan(`${call.operation} ${call.model}`, { kind: SpanKind.CLIENT }, parent);
  const recording = span.isRecording();
  if (recording) span.setAttributes(startAttributes(call));
  const ctx = trace.setSpan(parent, span);
  return {
    span,
    run: (fn) => context.with(ctx, fn),
    fellBack(toModel, providerSlug) {
      if (!recording) return;
      span.setAttributes({
        'storefront.fallback.from': call.model,
        'storefront.fallback.to': toModel,
        'gen_ai.provider.name': PROVIDER_NAMES[providerSlug] ?? providerSlug,
      });
    },
    answered(outcome) {
      if (recording) {
        const usage: Partial<NonNullable<AnsweredCall['usage']>> = outcome.usage ?? {};
        const attributes: Attributes = {
          ...outcome.attributes,
          'gen_ai.response.model': outcome.responseModel,
          'gen_ai.usage.input_tokens': usage.inputTokens,
          'gen_ai.usage.output_tokens': usage.outputTokens,
          'storefront.tokens_charged': outcome.chargedTokens,
        };
        if (outcome.finishReason) attributes['gen_ai.response.finish_reasons'] = [outcome.finishReason];
        if (usage.cachedInputTokens) attributes['gen_ai.usage.cache_read.input_tokens'] = usage.cachedInputTokens;
        if (usage.cacheWriteTokens) attributes['gen_ai.usage.cache_creation.input_tokens'] = usage.cacheWriteTokens;
        if (usage.reasoningTokens) attributes['storefront.usage.reasoning_tokens'] = usage.reasoningTokens;
        if (call.captureContent && outcome.output) attributes['gen_ai.output.messages'] = contentAttribute(outcome.output());
        span.setAttributes(attributes);
      }
      span.end();
    },
    failed(err) {
      if (recording) {
        const code = err instanceof AppError ? err.code : 'INTERNAL';
        span.setAttributes({ 'error.type': code, 'storefront.tokens_charged': 0 });
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      }
      span.end();
    },
  };
}

function startAttributes(call: StartedCall): Attributes {
  const p = call.parameters ?? {};
  const attributes: Attributes = {
    'gen_ai.operation.name': call.operation,
    'gen_ai.provider.name': PROVIDER_NAMES[call.providerSlug] ?? call.providerSlug,
    'gen_ai.request.model': call.model,
    'storefront.reservation_id': call.requestId,
  };
  const set = (name: string, value: number | undefined) => {
    if (value !== undefined) attributes[name] = value;
  };
  set('gen_ai.request.max_tokens', p.maxTokens);
  set('gen_ai.request.temperature', p.temperature);
  set('gen_ai.request.top_p', p.topP);
  set('gen_ai.request.top_k', p.topK);
  set('gen_ai.request.seed', p.seed);
  set('gen_ai.request.presence_penalty', p.presencePenalty);
  set('gen_ai.request.frequency_penalty', p.frequencyPenalty);
  if (p.stop !== undefined) attributes['gen_ai.request.stop_sequences'] = Array.isArray(p.stop) ? p.stop : [p.stop];
  if (call.captureContent && call.input !== undefined) attributes['gen_ai.input.messages'] = contentAttribute(call.input);
  return attributes;
}
