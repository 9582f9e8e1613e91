import { badRequest } from '../../../platform/http/errors.js';
import { FetchError, type OutboundPolicy } from '../../../platform/net/outbound-policy.js';
import type { GatewayModel } from '../../catalog/service.js';
import { MAX_IMAGES_PER_REQUEST } from './image-input.js';
import { localSchemaRefusal } from '../providers/local/text.js';
import { messageImages, TEXT_PARAMETERS, type ChatMessage, type ProviderAdapter, type TextParameter } from '../providers/types.js';
import type { Hint, TextCall, TextOptions } from './types.js';

/*
 * The one policy for request fields a model cannot take:
 *
 * - Sampling hints (temperature, topP, topK) only shape how tokens are drawn. When the model cannot take one (its
 *   provider's API has no such parameter, the model has no temperature control, or Anthropic's extended thinking is on,
 *   which refuses temperature other than 1, any top_k, and top_p outside 0.95..1) it is left out of the upstream call
 *   and named in `x-storefront-ignored` under the caller's own name (`top_k`, `generationConfig.topK`...). It is never
 *   sent to fail upstream, and the charge is the usage the provider reports, so leaving it out changes no bill.
 * - Everything that changes the answer's contract (tools, tool_choice, response format, stop, seed, penalties, images)
 *   is refused with a 400 naming it: an answer that silently ignored it would be a different answer.
 * - `user` (the end user's id, for the provider's abuse monitoring) changes no answer: a provider without one gets the
 *   call without it (Mistral, Google, DeepSeek, Ollama...), as agents send it on every call.
 * - What a model takes is its provider's set less what its family cannot take (`adapter.parametersFor`: OpenAI's
 *   reasoning models refuse stop and the penalties, and leave out top_p).
 * - With thinking on an Anthropic model, a tool_choice that forces a tool is a 400 as well (Anthropic refuses the pair).
 *
 * The reasoning control itself follows the first rule (reasoning.ts: a model without one answers without it).
 */

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

type Checked = {
  model: Pick<GatewayModel, 'slug' | 'upstreamModel' | 'features' | 'capabilities'>;
  adapter: Pick<ProviderAdapter, 'kind' | 'parameters' | 'parametersFor' | 'images' | 'jsonSchema'>;
};

/** The parameters left out rather than refused when the provider's API has none (see the policy above). */
const SAMPLING_PARAMETERS: ReadonlySet<TextParameter> = new Set<TextParameter>(['topP', 'topK', 'user']);

/** What the adapter carries for this model: its provider's parameters, less what the model's family cannot take. */
const carriedFor = (adapter: Pick<ProviderAdapter, 'parameters' | 'parametersFor'>, upstreamModel: string) =>
  adapter.parametersFor?.(upstreamModel) ?? adapter.parameters;

/**
 * What the model and its provider can honour, checked before any reservation: every optional parameter but the hints
 * (sampling, `user`, `parallelToolCalls: true`) must be one the provider's adapter carries for the model, tools need a TOOLS model, images a VISION model whose adapter
 * carries them, a JSON schema a model that takes one, and the built-in model's schemas its limits. In that order; the
 * first failure is the answer.
 */
export function checkCapabilities({ model, adapter }: Checked, options: TextOptions, messages: readonly ChatMessage[]): void {
  const carried = carriedFor(adapter, model.upstreamModel);
  // `parallelToolCalls: true` allows what a model does anyway (a hint); `false` forbids it, which must be honoured.
  const isHint = (p: TextParameter) => SAMPLING_PARAMETERS.has(p) || (p === 'parallelToolCalls' && options.parallelToolCalls === true);
  const refused = TEXT_PARAMETERS.filter((p) => options[p] !== undefined && !isHint(p) && !carried.has(p));
  if (refused.length > 0) {
    throw badRequest(
      `The model "${model.slug}" cannot honour ${refused.map(named).join(', ')}: its provider's API does not take ${refused.length === 1 ? 'it' : 'them'} for this model. Leave ${refused.length === 1 ? 'it' : 'them'} out or choose another model.`,
      refused.map((p) => ({ field: p, message: `is not supported by ${model.slug}` })),
    );
  }
  const tools = options.tools ?? [];
  if (tools.length > 0 && !model.features.includes('TOOLS')) {
    throw badRequest(`The model "${model.slug}" does not call tools. Choose a model with the TOOLS feature (GET /v1/models?capability=TOOLS).`, [
      { field: 'tools', message: 'needs a TOOLS model' },
    ]);
  }
  const choice = options.toolChoice;
  if (choice !== undefined && choice !== 'auto' && choice !== 'none' && tools.length === 0) {
    throw badRequest('tool_choice asks for a tool call, but the request has no tools.', [{ field: 'toolChoice', message: 'needs tools' }]);
  }
  if (typeof choice === 'object' && !tools.some((t) => t.name === choice.name)) {
    throw badRequest(`tool_choice names the tool "${choice.name}", which is not among the request's tools.`, [
      { field: 'toolChoice', message: 'must name one of the tools' },
    ]);
  }
  const images = messages.reduce((sum, m) => sum + messageImages(m).length, 0);
  if (images > MAX_IMAGES_PER_REQUEST) {
    throw badRequest(`The messages hold ${images} images; a request may carry at most ${MAX_IMAGES_PER_REQUEST}.`, [
      { field: 'messages', message: `at most ${MAX_IMAGES_PER_REQUEST} images` },
    ]);
  }
  if (images > 0 && !(adapter.images && model.features.includes('VISION'))) {
    throw badRequest(
      `The model "${model.slug}" does not read images. Choose a model with the VISION feature (GET /v1/models?capability=VISION), or send text only.`,
      [{ field: 'messages', message: 'image parts need a VISION model' }],
    );
  }
  if (
    options.responseFormat?.type === 'json_schema' &&
    !(adapter.jsonSchema && model.features.includes('TOOLS') && model.capabilities.flags?.jsonSchema !== false)
  ) {
    const instead = adapter.kind === 'anthropic' ? 'Choose a model that takes a schema' : 'Use response_format json_object, or a model that takes a schema';
    throw badRequest(`The model "${model.slug}" cannot answer to a JSON schema. ${instead}.`, [
      { field: 'responseFormat', message: 'json_schema is not supported by this model' },
    ]);
  }
  // Claude has no JSON mode, and its schemas close every object, so none stands for "any object".
  if (options.responseFormat?.type === 'json_object' && adapter.kind === 'anthropic') {
    throw badRequest(
      `The model "${model.slug}" has no JSON mode without a schema. Send response_format json_schema with the object's schema, or ask for JSON in the prompt.`,
      [{ field: 'responseFormat', message: 'json_object is not supported by this model; send a json_schema' }],
    );
  }
  // The built-in model writes schema values itself, on the event loop; real providers apply their own limits.
  const refusal = adapter.kind === 'local' ? localSchemaRefusal(options) : undefined;
  if (refusal) throw badRequest(refusal.message, [{ field: refusal.field, message: `is past the built-in model's ${refusal.limit} limit` }]);
}

/** Anthropic's range for top_p with thinking on (https://platform.claude.com/docs/en/build-with-claude/extended-thinking#feature-compatibility). */
const THINKING_TOP_P = { min: 0.95, max: 1 };

/**
 * The hints the call leaves out on this model, in the gateway's names. `thinking`: Anthropic's extended
 * thinking is on for the call (temperature may then only be 1, top_k must be unset, top_p within 0.95..1).
 */
export function hintsLeftOut(
  {
    model,
    adapter,
  }: { model: Pick<GatewayModel, 'capabilities' | 'upstreamModel'>; adapter: Pick<ProviderAdapter, 'kind' | 'parameters' | 'parametersFor'> | undefined },
  call: Pick<TextCall, 'temperature' | 'options'>,
  thinking: boolean,
): Hint[] {
  const { topP, topK, user, parallelToolCalls } = call.options ?? {};
  const temperature = call.temperature;
  const carried = (p: TextParameter) => !adapter || carriedFor(adapter, model.upstreamModel).has(p);
  const leftOut: Hint[] = [];
  // Reasoning models advertise no temperature control (OpenAI's refuse any value but the default).
  if (temperature !== undefined && (!model.capabilities.controls?.temperature || (thinking && temperature !== 1))) leftOut.push('temperature');
  if (topP !== undefined && (!carried('topP') || (thinking && (topP < THINKING_TOP_P.min || topP > THINKING_TOP_P.max)))) leftOut.push('topP');
  if (topK !== undefined && (!carried('topK') || thinking)) leftOut.push('topK');
  if (user !== undefined && !carried('user')) leftOut.push('user');
  if (parallelToolCalls === true && !carried('parallelToolCalls')) leftOut.push('parallelToolCalls');
  // Current Claude models take temperature or top_p, not both ("`temperature` and `top_p` cannot both be specified
  // for this model"; https://docs.claude.com/en/docs/about-claude/models/migrating-to-claude-4): temperature is kept.
  const bothSent = temperature !== undefined && !leftOut.includes('temperature') && topP !== undefined && !leftOut.includes('topP');
  if (bothSent && adapter?.kind === 'anthropic') leftOut.push('topP');
  return leftOut;
}

/** The caller's names for the hints left out (the surface's `fieldNames`, else the gateway's own). */
export const leftOutNames = (leftOut: readonly Hint[], options: TextOptions | undefined): string[] =>
  leftOut.map((hint) => options?.fieldNames?.[hint] ?? hint);

/**
 * With thinking on, Anthropic refuses a tool_choice that forces a tool ("Thinking may not be enabled when tool_choice
 * forces tool use"): refused here, before any reservation, rather than failing upstream.
 */
export function checkThinkingToolChoice(model: Pick<GatewayModel, 'slug'>, options: TextOptions, reasoningField: string): void {
  const choice = options.toolChoice;
  if (choice !== 'required' && typeof choice !== 'object') return;
  throw badRequest(
    `tool_choice forces a tool call, which "${model.slug}" cannot do while thinking (Anthropic refuses the pair). Set tool_choice to auto (or none), or turn thinking off by leaving out ${reasoningField}.`,
    [{ field: 'toolChoice', message: 'must be auto or none while thinking is on' }],
  );
}

/** How long the image URLs' hosts may take to resolve, all together, before the request is refused. */
export const IMAGE_URL_CHECK_DEADLINE_MS = 3_000;

type UrlCheck = { ok: true } | { ok: false; reason: string };

/**
 * Image URLs go to the provider, which fetches them itself: each must pass the outbound policy here (https, public
 * addresses only), so no caller can make a provider, or us, reach a private address. This runs before any
 * reservation, so the hosts are resolved at once (each distinct one once) under one deadline, and a host that does
 * not resolve in time refuses the request rather than holding it.
 */
export async function checkImageUrls(
  outbound: Pick<OutboundPolicy, 'check'> | undefined,
  messages: readonly ChatMessage[],
  deadlineMs = IMAGE_URL_CHECK_DEADLINE_MS,
): Promise<void> {
  if (!outbound) return;
  const images = messages.flatMap((message, index) =>
    messageImages(message).flatMap((image) => (image.source.kind === 'url' ? [{ index, url: new URL(image.source.url) }] : [])),
  );
  if (images.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, deadlineMs);
  });
  const checks = new Map<string, Promise<UrlCheck>>();
  const checkOf = (url: URL): Promise<UrlCheck> => {
    // The policy looks at the scheme, the credentials and the host only: one check answers for every path there.
    const target = `${url.protocol}//${url.username}:${url.password}@${url.host}`;
    let check = checks.get(target);
    if (!check) {
      const settled = outbound.check(url).then(
        (): UrlCheck => ({ ok: true }),
        (err: unknown): UrlCheck => {
          if (err instanceof FetchError) return { ok: false, reason: err.message };
          throw err;
        },
      );
      const late = deadline.then((): UrlCheck => ({ ok: false, reason: `its host "${url.hostname}" could not be resolved within ${deadlineMs / 1000} s.` }));
      check = Promise.race([settled, late]);
      checks.set(target, check);
    }
    return check;
  };
  try {
    const results = await Promise.all(images.map(({ url }) => checkOf(url)));
    const failed = results.findIndex((result) => !result.ok);
    if (failed < 0) return;
    const { index } = images[failed]!;
    throw badRequest(`The image URL in message ${index} cannot be used: ${(results[failed] as { reason: string }).reason}`, [
      { field: `messages.${index}.content`, message: 'the image URL must be a public https address' },
    ]);
  } finally {
    clearTimeout(timer);
  }
}
