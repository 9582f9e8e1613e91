import { OPENAI_PARAMETERS } from './openai-chat.js';
import type { TextParameter } from './types.js';

/**
 * What each OpenAI-compatible provider takes on its chat-completions endpoint. The servers share OpenAI's wire format
 * but not its field set: some refuse a field they do not know (Mistral answers 422 "Extra inputs are not permitted",
 * Google 400 "Unknown name"), some take it and ignore it, and reasoning models refuse fields their provider otherwise
 * takes. The adapter declares the profile's set, so the gateway refuses (or, for a sampling hint or `user`, leaves out)
 * what a model cannot take before anything is reserved (text-capabilities.ts), and sends the rest under the provider's
 * names. Each rule names its source: the provider's API reference or official SDK types, read in 2026.
 */
export interface ProviderProfile {
  /** The catalog provider it serves (`openai-compatible` for a server configured only by `<PREFIX>_BASE_URL`). */
  readonly slug: string;
  /** The optional parameters the API takes and honours; a field it ignores is not one of them. */
  readonly parameters: ReadonlySet<TextParameter>;
  /** Fields the API spells its own way: OpenAI's wire name -> the provider's. */
  readonly renames?: Readonly<Record<string, string>>;
  /** The output limit's field. */
  readonly tokenLimit: 'max_tokens' | 'max_completion_tokens';
  /**
   * How a stream's usage is obtained: `stream_options` asks for OpenAI's final usage chunk; `unasked` means the API
   * sends usage on its own and has no `stream_options`, which is then never sent.
   */
  readonly streamUsage: 'stream_options' | 'unasked';
  /** Whether the API takes a JSON schema as the answer's format (json_object otherwise). */
  readonly jsonSchema: boolean;
  /** Model families that cannot take some of the provider's parameters. */
  readonly families?: readonly FamilyRule[];
}

export interface FamilyRule {
  /** The upstream model names the rule covers. */
  readonly models: RegExp;
  /** The provider's parameters this family cannot take. */
  readonly without: readonly TextParameter[];
  /**
   * `refused`: the API answers 400 to a temperature (other than its default); `ignored`: it takes one to no effect.
   * Temperature is the catalog's control (`capabilities.controls.temperature`), which must agree (profiles.test.ts).
   */
  readonly temperature?: 'refused' | 'ignored';
}

const without = (parameters: ReadonlySet<TextParameter>, ...drop: TextParameter[]): ReadonlySet<TextParameter> =>
  new Set([...parameters].filter((parameter) => !drop.includes(parameter)));
const withTopK: ReadonlySet<TextParameter> = new Set([...OPENAI_PARAMETERS, 'topK']);

/** A server configured only by `<PREFIX>_BASE_URL`: OpenAI's own field set, as before profiles existed. */
export const OPENAI_COMPATIBLE: ProviderProfile = { slug: 'openai-compatible', parameters: OPENAI_PARAMETERS, tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true };

const PENALTIES: TextParameter[] = ['presencePenalty', 'frequencyPenalty'];

export const PROFILES: Readonly<Record<string, ProviderProfile>> = {
  // https://platform.openai.com/docs/api-reference/chat/create. `max_tokens` is refused by reasoning models and
  // deprecated for the others, so `max_completion_tokens` for all.
  openai: {
    slug: 'openai',
    parameters: OPENAI_PARAMETERS,
    tokenLimit: 'max_completion_tokens',
    streamUsage: 'stream_options',
    jsonSchema: true,
    families: [
      // Reasoning models: https://platform.openai.com/docs/guides/reasoning ("Limitations": no temperature, top_p or
      // penalties); `stop` answers 400 unsupported_parameter (github.com/huggingface/smolagents/issues/1671, gpt-5-mini),
      // as does `parallel_tool_calls` on the o-series (github.com/run-llama/llama_index/issues/20865: o1, o3, o4-mini).
      { models: /^o\d/, without: ['topP', ...PENALTIES, 'stop', 'parallelToolCalls'], temperature: 'refused' },
      // GPT-5 (https://platform.openai.com/docs/guides/latest-model, "parameter compatibility"): temperature and top_p
      // only on 5.1 and later with reasoning effort none, which the model name cannot tell, so never. The chat models
      // (gpt-5-chat-latest) do not reason and take everything.
      { models: /^gpt-5(?!.*-chat)/, without: ['topP', ...PENALTIES, 'stop'], temperature: 'refused' },
    ],
  },
  // https://ai.google.dev/gemini-api/docs/openai. The endpoint refuses fields it does not know with 400 "Unknown name
  // ... Cannot find field", seen for seed, frequency_penalty and presence_penalty (github.com/Vali-98/ChatterUI/issues/227,
  // github.com/BerriAI/litellm/issues/14753) and parallel_tool_calls ("Parallel tool calls are not supported",
  // github.com/TheAgenticAI/TheAgenticBrowser/issues/4); `user` is not documented.
  google: { slug: 'google', parameters: new Set(['tools', 'toolChoice', 'responseFormat', 'topP', 'stop']), tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true },
  // https://openrouter.ai/docs/api-reference/parameters: OpenAI's set plus top_k. Usage is always in the last chunk;
  // `stream_options.include_usage` is deprecated "and has no effect" (openrouter.ai/docs/client-sdks/python/components
  // /chatstreamoptions).
  openrouter: { slug: 'openrouter', parameters: withTopK, tokenLimit: 'max_tokens', streamUsage: 'unasked', jsonSchema: true },
  // `ChatCompletionCreateParams` in groq-sdk (github.com/groq/groq-typescript, src/resources/chat/completions.ts):
  // frequency_penalty and presence_penalty are "not yet supported by any of our models" (taken and ignored). A stream's
  // usage comes in `x_groq.usage` on its last chunk, and in OpenAI's usage chunk when asked.
  groq: { slug: 'groq', parameters: without(OPENAI_PARAMETERS, ...PENALTIES), tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true },
  // `ChatCompletionStreamRequest$Outbound` in @mistralai/mistralai (github.com/mistralai/client-ts,
  // src/models/components/chatcompletionstreamrequest.ts): the seed is `random_seed`, there is no `user` and no
  // `stream_options`, and any other field is a 422 "Extra inputs are not permitted". Usage comes unasked on the last
  // chunk (the one with the finish reason), as in https://docs.mistral.ai/api/#tag/chat.
  mistral: {
    slug: 'mistral',
    parameters: without(OPENAI_PARAMETERS, 'user'),
    renames: { seed: 'random_seed' },
    tokenLimit: 'max_tokens',
    streamUsage: 'unasked',
    jsonSchema: true,
  },
  // https://api-docs.deepseek.com/api/create-chat-completion: no seed, user or parallel_tool_calls, and response_format
  // is text or json_object only.
  deepseek: {
    slug: 'deepseek',
    parameters: new Set(['tools', 'toolChoice', 'responseFormat', 'topP', 'stop', ...PENALTIES]),
    tokenLimit: 'max_tokens',
    streamUsage: 'stream_options',
    jsonSchema: false,
    // Thinking mode (https://api-docs.deepseek.com/guides/thinking_mode): temperature and the penalties are taken "but
    // will have no effect".
    families: [{ models: /^deepseek-reasoner/, without: PENALTIES, temperature: 'ignored' }],
  },
  // https://docs.x.ai/docs/api-reference#chat-completions: OpenAI's set; stream_options.include_usage is taken.
  xai: {
    slug: 'xai',
    parameters: OPENAI_PARAMETERS,
    tokenLimit: 'max_tokens',
    streamUsage: 'stream_options',
    jsonSchema: true,
    families: [
      // https://docs.x.ai/docs/guides/reasoning: "presencePenalty, frequencyPenalty and stop parameters are not supported
      // by reasoning models. Adding them in the request would result in error." Every grok-3-mini, grok-4 and
      // grok-code model reasons, but for the `-non-reasoning` variants.
      { models: /^grok-(3-mini|4|code)(?!.*non-reasoning)/, without: [...PENALTIES, 'stop'] },
      // The grok-4 non-reasoning variants refuse the penalties too (github.com/miaoxworld/NativeTavern/issues/83).
      { models: /^grok-4.*non-reasoning/, without: PENALTIES },
    ],
  },
  // `CompletionCreateParams` in together-ai (github.com/togethercomputer/together-typescript,
  // src/resources/chat/completions.ts): top_k, no user or parallel_tool_calls, no stream_options; its chunks carry usage.
  together: { slug: 'together', parameters: without(withTopK, 'user', 'parallelToolCalls'), tokenLimit: 'max_tokens', streamUsage: 'unasked', jsonSchema: true },
  // https://docs.fireworks.ai/api-reference/post-chatcompletions: top_k and user; no seed or parallel_tool_calls.
  fireworks: { slug: 'fireworks', parameters: without(withTopK, 'seed', 'parallelToolCalls'), tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true },
  // `ApiChatCompletionsRequest` in @perplexity-ai/perplexity_ai (github.com/perplexityai/perplexity-node,
  // src/generated/api.ts): top_k, no seed, user or stream_options; every chunk carries usage.
  perplexity: { slug: 'perplexity', parameters: without(withTopK, 'seed', 'user'), tokenLimit: 'max_tokens', streamUsage: 'unasked', jsonSchema: true },
  // https://github.com/ollama/ollama/blob/main/docs/openai.md ("Supported request fields"): no tool_choice, user or
  // parallel_tool_calls; the server ignores fields it does not know, so they are refused here rather than lost.
  ollama: { slug: 'ollama', parameters: without(OPENAI_PARAMETERS, 'toolChoice', 'parallelToolCalls', 'user'), tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true },
  // https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html: OpenAI's set plus its sampling extras (top_k).
  vllm: { slug: 'vllm', parameters: withTopK, tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true },
};

/** The profile of a catalog provider; a provider known only by its base URL speaks OpenAI's field set. */
export const profileOf = (providerSlug: string): ProviderProfile => PROFILES[providerSlug] ?? OPENAI_COMPATIBLE;

/** The family rules that cover the upstream model. */
export const familiesOf = (profile: ProviderProfile, upstreamModel: string): FamilyRule[] => (profile.families ?? []).filter((rule) => rule.models.test(upstreamModel));

/** The parameters the provider takes for this model: its own set, less what the model's family cannot take. */
export function parametersFor(profile: ProviderProfile, upstreamModel: string): ReadonlySet<TextParameter> {
  const families = familiesOf(profile, upstreamModel);
  return families.length === 0 ? profile.parameters : without(profile.parameters, ...families.flatMap((rule) => rule.without));
}
