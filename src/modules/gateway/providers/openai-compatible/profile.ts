import { OPENAI_PARAMETERS } from './chat.js';
import type { TextParameter } from '../types.js';

/**
 * What each OpenAI-compatible provider takes on its chat-completions endpoint. The servers share OpenAI's wire format
 * but not its field set: some refuse a field they do not know (Mistral answers 422 "Extra inputs are not permitted",
 * Google 400 "Unknown name"), some take it and ignore it, and reasoning models refuse fields their provider otherwise
 * takes. The adapter declares the profile's set, so the gateway refuses (or, for a sampling hint or `user`, leaves out)
 * what a model cannot take before anything is reserved (text/capabilities.ts), and sends the rest under the provider's
 * names. Each provider's profile is in its folder (`providers/<slug>/plugin.ts`), and each rule there names its
 * source: the provider's API reference or official SDK types, read in 2026.
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

/** The set less some parameters (a profile written as OpenAI's set, or another, minus what the API refuses). */
export const without = (parameters: ReadonlySet<TextParameter>, ...drop: TextParameter[]): ReadonlySet<TextParameter> =>
  new Set([...parameters].filter((parameter) => !drop.includes(parameter)));
/** OpenAI's set plus `top_k`, which several hosts of open models take. */
export const withTopK: ReadonlySet<TextParameter> = new Set([...OPENAI_PARAMETERS, 'topK']);

/** A server configured only by `<PREFIX>_BASE_URL`: OpenAI's own field set, as before profiles existed. */
export const OPENAI_COMPATIBLE: ProviderProfile = {
  slug: 'openai-compatible',
  parameters: OPENAI_PARAMETERS,
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
};

/** The two penalties, which many APIs and reasoning families refuse together. */
export const PENALTIES: readonly TextParameter[] = ['presencePenalty', 'frequencyPenalty'];

/** The family rules that cover the upstream model. */
export const familiesOf = (profile: ProviderProfile, upstreamModel: string): FamilyRule[] =>
  (profile.families ?? []).filter((rule) => rule.models.test(upstreamModel));

/** The parameters the provider takes for this model: its own set, less what the model's family cannot take. */
export function parametersFor(profile: ProviderProfile, upstreamModel: string): ReadonlySet<TextParameter> {
  const families = familiesOf(profile, upstreamModel);
  return families.length === 0 ? profile.parameters : without(profile.parameters, ...families.flatMap((rule) => rule.without));
}
