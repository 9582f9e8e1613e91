import { promptTokenBound } from './image-tokens.js';
import type { EstimateRequest, GatewayModel } from './service.js';

/** Text output budget when a call gives no maxTokens (text and multimodal). */
export const DEFAULT_MAX_TOKENS = 2048;
/** Characters assumed for a speech estimate that names no text. */
export const DEFAULT_SPEECH_CHARACTERS = 1000;
const DEFAULT_VIDEO_SECONDS = 5;

export interface EstimateInput {
  inputTokens?: number;
  prompt?: string;
  messages?: Array<{ role: string; content: string }>;
  maxTokens?: number;
  count?: number;
  durationSeconds?: number;
  text?: string;
  characters?: number;
}

/**
 * A prompt's token count before the provider counts it: about 4 bytes of UTF-8 per token (so scripts such as
 * Bengali, 3 bytes a letter, count closer to their real cost), plus a few tokens of framing per message.
 */
export function approximateTokens(input: { prompt?: string; messages?: Array<{ content: string }> }): number {
  let tokens = 0;
  if (input.prompt) tokens += Math.ceil(Buffer.byteLength(input.prompt, 'utf8') / 4);
  for (const message of input.messages ?? []) tokens += 4 + Math.ceil(Buffer.byteLength(message.content, 'utf8') / 4);
  return tokens;
}

const controlDefault = (model: GatewayModel, key: string): unknown => {
  const control = model.capabilities.controls[key];
  return control && typeof control === 'object' ? (control as { default?: unknown }).default : undefined;
};

/** What one generation of this model with these request fields will be estimated on (the gateway uses the same). */
export function estimateRequestFor(model: GatewayModel, input: EstimateInput): { request: EstimateRequest; basis: Record<string, string | number> } {
  switch (model.type) {
    case 'TEXT':
    case 'MULTIMODAL':
    case 'EMBEDDING': {
      const inputTokens = input.inputTokens ?? approximateTokens(input);
      const requested = input.maxTokens ?? DEFAULT_MAX_TOKENS;
      const maxOutputTokens = model.type === 'EMBEDDING' ? 0 : model.maxOutputTokens ? Math.min(requested, model.maxOutputTokens) : requested;
      return { request: { kind: 'text', inputTokens, maxOutputTokens }, basis: { inputTokens, maxTokens: maxOutputTokens } };
    }
    case 'IMAGE': {
      // Token-billed image models reserve their dearest quality at the default size; the prompt's bound when given.
      const count = input.count ?? 1;
      const promptTokens = input.inputTokens ?? (input.prompt ? promptTokenBound(input.prompt) : undefined);
      return { request: { kind: 'image', count, ...(promptTokens === undefined ? {} : { promptTokens }) }, basis: { count } };
    }
    case 'VIDEO': {
      const fallback = controlDefault(model, 'durationSeconds');
      const seconds = input.durationSeconds ?? (typeof fallback === 'number' ? fallback : DEFAULT_VIDEO_SECONDS);
      return { request: { kind: 'video', seconds }, basis: { durationSeconds: seconds } };
    }
    case 'AUDIO': {
      if (model.features.includes('MUSIC') && !model.features.includes('TTS')) return { request: { kind: 'music' }, basis: { generations: 1 } };
      const characters = input.characters ?? (input.text !== undefined ? [...input.text].length : DEFAULT_SPEECH_CHARACTERS);
      return { request: { kind: 'speech', characters }, basis: { characters } };
    }
  }
}
