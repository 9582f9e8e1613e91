import { openAiImageTokens, type ImageTokenRule } from '../text/tokens.js';
import { anthropic } from './anthropic/plugin.js';
import { bfl } from './bfl/plugin.js';
import { deepseek } from './deepseek/plugin.js';
import { elevenlabs } from './elevenlabs/plugin.js';
import { fireworks } from './fireworks/plugin.js';
import { google } from './google/plugin.js';
import { groq } from './groq/plugin.js';
import { ideogram } from './ideogram/plugin.js';
import { kling } from './kling/plugin.js';
import { local } from './local/plugin.js';
import { minimax } from './minimax/plugin.js';
import { mistral } from './mistral/plugin.js';
import { ollama } from './ollama/plugin.js';
import { openai } from './openai/plugin.js';
import { OPENAI_COMPATIBLE, type ProviderProfile } from './openai-compatible/profile.js';
import { openrouter } from './openrouter/plugin.js';
import { perplexity } from './perplexity/plugin.js';
import type { ProviderPlugin } from './plugin.js';
import { recraft } from './recraft/plugin.js';
import { runway } from './runway/plugin.js';
import { stability } from './stability/plugin.js';
import { together } from './together/plugin.js';
import { vllm } from './vllm/plugin.js';
import { xai } from './xai/plugin.js';

/**
 * Every provider the gateway knows, one plugin per folder (`plugin.ts` describes what a plugin says). Adding one is
 * its folder, its line here and its catalog rows; `plugins.test.ts` walks this list. A provider not listed but
 * configured with `<PREFIX>_BASE_URL` is served as OpenAI-compatible, with OpenAI's field set (`OPENAI_COMPATIBLE`).
 */
export const PROVIDERS: readonly ProviderPlugin[] = [
  local,
  openai,
  anthropic,
  google,
  openrouter,
  groq,
  mistral,
  deepseek,
  xai,
  together,
  fireworks,
  perplexity,
  ollama,
  vllm,
  bfl,
  kling,
  minimax,
  runway,
  elevenlabs,
  stability,
  ideogram,
  recraft,
];

const bySlug = new Map(PROVIDERS.map((plugin) => [plugin.slug, plugin]));

/** The plugin of a catalog provider; undefined for a provider known only by its `<PREFIX>_BASE_URL`. */
export const pluginOf = (providerSlug: string): ProviderPlugin | undefined => bySlug.get(providerSlug);

/** The profile of a catalog provider; a provider known only by its base URL speaks OpenAI's field set. */
export const profileOf = (providerSlug: string): ProviderProfile => pluginOf(providerSlug)?.text?.profile ?? OPENAI_COMPATIBLE;

/** What an input image costs on a provider: its plugin says it (Anthropic's own); the others count as OpenAI does. */
export const imageTokenRule = (providerSlug: string): ImageTokenRule => pluginOf(providerSlug)?.text?.imageTokens ?? openAiImageTokens;
