import { badRequest } from '../../platform/http/errors.js';
import { FetchError, type OutboundPolicy } from '../../platform/net/outbound-policy.js';
import type { GatewayModel } from '../catalog/service.js';
import { MAX_IMAGES_PER_REQUEST } from './image-input.js';
import { messageImages, TEXT_PARAMETERS, type ChatMessage, type ProviderAdapter, type TextParameter } from './providers/types.js';
import type { TextOptions } from './text-types.js';

/** The wire names of the gateway's parameters, so a refusal names what the caller actually sent. */
const WIRE_NAMES: Record<TextParameter, string> = {
  tools: 'tools',
  toolChoice: 'tool_choice',
  parallelToolCalls: 'parallel_tool_calls',
  responseFormat: 'response_format',
  topP: 'top_p',
  topK: 'top_k',
  stop: 'stop / stop_sequences',
  seed: 'seed',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
  user: 'user / metadata.user_id',
};
const named = (parameter: TextParameter) => (WIRE_NAMES[parameter] === parameter ? parameter : `${parameter} (${WIRE_NAMES[parameter]})`);

type Checked = { model: Pick<GatewayModel, 'slug' | 'features' | 'capabilities'>; adapter: Pick<ProviderAdapter, 'kind' | 'parameters' | 'images' | 'jsonSchema'> };

/**
 * What the model and its provider can honour, checked before any reservation: every optional parameter must be one the
 * provider's adapter carries (never dropped silently), tools need a TOOLS model, images a VISION model whose adapter
 * carries them, and a JSON schema a model that takes one. In that order; the first failure is the answer.
 */
export function checkCapabilities({ model, adapter }: Checked, options: TextOptions, messages: readonly ChatMessage[]): void {
  const refused = TEXT_PARAMETERS.filter((p) => options[p] !== undefined && !adapter.parameters.has(p));
  if (refused.length > 0) {
    throw badRequest(
      `The model "${model.slug}" cannot honour ${refused.map(named).join(', ')}: its provider's API has no such parameter. Leave ${refused.length === 1 ? 'it' : 'them'} out or choose another model.`,
      refused.map((p) => ({ field: p, message: `is not supported by ${model.slug}` })),
    );
  }
  const tools = options.tools ?? [];
  if (tools.length > 0 && !model.features.includes('TOOLS')) {
    throw badRequest(`The model "${model.slug}" does not call tools. Choose a model with the TOOLS feature (GET /v1/models?capability=TOOLS).`, [{ field: 'tools', message: 'needs a TOOLS model' }]);
  }
  const choice = options.toolChoice;
  if (choice !== undefined && choice !== 'auto' && choice !== 'none' && tools.length === 0) {
    throw badRequest('tool_choice asks for a tool call, but the request has no tools.', [{ field: 'toolChoice', message: 'needs tools' }]);
  }
  if (typeof choice === 'object' && !tools.some((t) => t.name === choice.name)) {
    throw badRequest(`tool_choice names the tool "${choice.name}", which is not among the request's tools.`, [{ field: 'toolChoice', message: 'must name one of the tools' }]);
  }
  const images = messages.reduce((sum, m) => sum + messageImages(m).length, 0);
  if (images > MAX_IMAGES_PER_REQUEST) {
    throw badRequest(`The messages hold ${images} images; a request may carry at most ${MAX_IMAGES_PER_REQUEST}.`, [{ field: 'messages', message: `at most ${MAX_IMAGES_PER_REQUEST} images` }]);
  }
  if (images > 0 && !(adapter.images && model.features.includes('VISION'))) {
    throw badRequest(`The model "${model.slug}" does not read images. Choose a model with the VISION feature (GET /v1/models?capability=VISION), or send text only.`, [
      { field: 'messages', message: 'image parts need a VISION model' },
    ]);
  }
  if (options.responseFormat?.type === 'json_schema' && !(adapter.jsonSchema && model.features.includes('TOOLS') && model.capabilities.flags?.jsonSchema !== false)) {
    throw badRequest(`The model "${model.slug}" cannot answer to a JSON schema. Use response_format json_object, or a model that takes a schema.`, [
      { field: 'responseFormat', message: 'json_schema is not supported by this model' },
    ]);
  }
}

/**
 * Image URLs go to the provider, which fetches them itself: each must pass the outbound policy here (https, public
 * addresses only), so no caller can make a provider, or us, reach a private address.
 */
export async function checkImageUrls(outbound: Pick<OutboundPolicy, 'check'> | undefined, messages: readonly ChatMessage[]): Promise<void> {
  if (!outbound) return;
  for (const [index, message] of messages.entries()) {
    for (const image of messageImages(message)) {
      if (image.source.kind !== 'url') continue;
      try {
        await outbound.check(new URL(image.source.url));
      } catch (err) {
        if (!(err instanceof FetchError)) throw err;
        throw badRequest(`The image URL in message ${index} cannot be used: ${err.message}`, [{ field: `messages.${index}.content`, message: 'the image URL must be a public https address' }]);
      }
    }
  }
}
