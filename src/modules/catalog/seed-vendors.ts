import { USD_NOTE, chat, embedding, image, retired, speech, video, type SeedModel } from './seed-helpers.js';

/**
 * Real providers' current models with their published per-unit list prices (US cents; per 1M tokens,
 * per image, per second of video, per 1k characters or per minute of speech, per generation).
 * Checked against the vendors' pricing pages in autumn 2025; the seed refreshes them on upgrade.
 */
const NO_TEMPERATURE = { controls: { temperature: null } };
/**
 * How each reasoning model takes a reasoning control (the gateway's `reasoning.ts`): `effort` for OpenAI's
 * `reasoning_effort` (o-series, GPT-5; xAI's grok-3-mini with low and high only; Groq's gpt-oss with low, medium and
 * high), `budget` for Anthropic's extended thinking. A model without the flag answers without the control.
 */
const EFFORT = { flags: { reasoning: 'effort' } };
const EFFORT_NO_TEMPERATURE = { ...NO_TEMPERATURE, ...EFFORT };
const THINKING = { flags: { reasoning: 'budget' } };
/**
 * Which Claude models answer to a JSON schema (`output_config.format`, `capabilities.flags.jsonSchema`, read by
 * gateway/text/capabilities.ts): structured outputs are generally available for Claude Opus 4.6, Sonnet 4.6, Sonnet 4.5,
 * Opus 4.5 and Haiku 4.5 (https://platform.claude.com/docs/en/build-with-claude/structured-outputs; Opus 4.1 had it
 * in the beta only). The older models carry `false`, so a schema for them is refused before anything is reserved
 * rather than failing upstream.
 */
const THINKING_JSON = { flags: { ...THINKING.flags, jsonSchema: true } };
const THINKING_NO_JSON = { flags: { ...THINKING.flags, jsonSchema: false } };

// Cached-input prices from OpenAI's pricing page; Anthropic's cache reads at 10%, 5-minute cache writes at 125% and
// 1-hour cache writes at 200% of input (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing).
export const VENDOR_TEXT_MODELS: SeedModel[] = [
  // OpenAI
  chat('openai', 'gpt-5', 'GPT-5', {
    in: 125,
    out: 1000,
    cached: 12.5,
    ctx: 400_000,
    maxOut: 128_000,
    vision: true,
    reasoning: true,
    description: "OpenAI's flagship reasoning model for coding and agentic tasks.",
    override: EFFORT_NO_TEMPERATURE,
  }),
  chat('openai', 'gpt-5-mini', 'GPT-5 mini', {
    in: 25,
    out: 200,
    cached: 2.5,
    ctx: 400_000,
    maxOut: 128_000,
    vision: true,
    reasoning: true,
    description: 'A faster, cheaper GPT-5 for well-defined tasks.',
    override: EFFORT_NO_TEMPERATURE,
  }),
  chat('openai', 'gpt-5-nano', 'GPT-5 nano', {
    in: 5,
    out: 40,
    cached: 0.5,
    ctx: 400_000,
    maxOut: 128_000,
    vision: true,
    reasoning: true,
    description: 'The fastest, cheapest GPT-5 for summarisation and classification.',
    override: EFFORT_NO_TEMPERATURE,
  }),
  chat('openai', 'gpt-4.1', 'GPT-4.1', {
    in: 200,
    out: 800,
    cached: 50,
    ctx: 1_047_576,
    maxOut: 32_768,
    vision: true,
    description: 'Non-reasoning model with a 1M-token context, strong at instruction following.',
  }),
  chat('openai', 'gpt-4.1-mini', 'GPT-4.1 mini', {
    in: 40,
    out: 160,
    cached: 10,
    ctx: 1_047_576,
    maxOut: 32_768,
    vision: true,
    description: 'Smaller GPT-4.1 balancing speed and intelligence.',
  }),
  chat('openai', 'gpt-4.1-nano', 'GPT-4.1 nano', {
    in: 10,
    out: 40,
    cached: 2.5,
    ctx: 1_047_576,
    maxOut: 32_768,
    vision: true,
    description: 'The fastest and cheapest GPT-4.1.',
  }),
  chat('openai', 'gpt-4o', 'GPT-4o', {
    in: 250,
    out: 1000,
    cached: 125,
    ctx: 128_000,
    maxOut: 16_384,
    vision: true,
    description: 'Versatile multimodal model.',
  }),
  chat('openai', 'gpt-4o-mini', 'GPT-4o mini', {
    in: 15,
    out: 60,
    cached: 7.5,
    ctx: 128_000,
    maxOut: 16_384,
    vision: true,
    description: 'Small, affordable multimodal model.',
  }),
  chat('openai', 'o3', 'o3', {
    in: 200,
    out: 800,
    cached: 50,
    ctx: 200_000,
    maxOut: 100_000,
    vision: true,
    reasoning: true,
    description: 'Reasoning model for math, science and coding.',
    override: EFFORT_NO_TEMPERATURE,
  }),
  chat('openai', 'o4-mini', 'o4-mini', {
    in: 110,
    out: 440,
    cached: 27.5,
    ctx: 200_000,
    maxOut: 100_000,
    vision: true,
    reasoning: true,
    description: 'Fast, cost-efficient reasoning model.',
    override: EFFORT_NO_TEMPERATURE,
  }),
  embedding('openai', 'text-embedding-3-small', 'Text Embedding 3 Small', 2, 8191, 'Small, efficient embedding model.'),
  embedding('openai', 'text-embedding-3-large', 'Text Embedding 3 Large', 13, 8191, 'Most capable OpenAI embedding model.'),

  // Anthropic
  // Claude Opus 4.7 and Sonnet 4.6 (https://platform.claude.com/docs/en/about-claude/models/overview: $5/$25 and $3/$15
  // per MTok, 1M context, 128k and 64k output). Opus 4.7 thinks adaptively only (a thinking budget is a 400) and refuses
  // a non-default temperature, top_p or top_k: sold without the budget control until the gateway speaks adaptive
  // thinking to it, and without temperature.
  chat('anthropic', 'claude-opus-4-7', 'Claude Opus 4.7', {
    in: 500,
    out: 2500,
    cached: 50,
    cacheWrite: 625,
    cacheWrite1h: 1000,
    ctx: 1_000_000,
    maxOut: 128_000,
    vision: true,
    description: "Anthropic's most capable model for complex, long-running agentic work.",
    override: { ...NO_TEMPERATURE, flags: { jsonSchema: true } },
  }),
  chat('anthropic', 'claude-sonnet-4-6', 'Claude Sonnet 4.6', {
    in: 300,
    out: 1500,
    cached: 30,
    cacheWrite: 375,
    cacheWrite1h: 600,
    ctx: 1_000_000,
    maxOut: 64_000,
    vision: true,
    reasoning: true,
    description: 'The balance of speed and intelligence; the default Claude for coding and agents.',
    override: THINKING_JSON,
  }),
  // Retired by Anthropic (https://platform.claude.com/docs/en/about-claude/model-deprecations): Sonnet 4 on 2026-06-15,
  // Opus 4.1 on 2026-08-05, Sonnet 4.5 on 2026-11-30 (its end of life in @anthropic-ai/sdk's
  // src/internal/data/deprecated-models.ts); requests to them fail upstream.
  retired(
    chat('anthropic', 'claude-opus-4-1', 'Claude Opus 4.1', {
      upstream: 'claude-opus-4-1-20250805',
      in: 1500,
      out: 7500,
      cached: 150,
      cacheWrite: 1875,
      cacheWrite1h: 3000,
      ctx: 200_000,
      maxOut: 32_000,
      vision: true,
      reasoning: true,
      description: 'Previous-generation Opus (retired by Anthropic).',
      override: THINKING_NO_JSON,
    }),
    'anthropic/claude-opus-4-7',
  ),
  retired(
    chat('anthropic', 'claude-sonnet-4', 'Claude Sonnet 4', {
      upstream: 'claude-sonnet-4-20250514',
      in: 300,
      out: 1500,
      cached: 30,
      cacheWrite: 375,
      cacheWrite1h: 600,
      ctx: 200_000,
      maxOut: 64_000,
      vision: true,
      reasoning: true,
      description: 'Previous-generation Sonnet (retired by Anthropic).',
      override: THINKING_NO_JSON,
    }),
    'anthropic/claude-sonnet-4-6',
  ),
  retired(
    chat('anthropic', 'claude-sonnet-4-5', 'Claude Sonnet 4.5', {
      upstream: 'claude-sonnet-4-5-20250929',
      in: 300,
      out: 1500,
      cached: 30,
      cacheWrite: 375,
      cacheWrite1h: 600,
      ctx: 200_000,
      maxOut: 64_000,
      vision: true,
      reasoning: true,
      description: 'Previous-generation Sonnet (retired by Anthropic).',
      override: THINKING_JSON,
    }),
    'anthropic/claude-sonnet-4-6',
  ),
  chat('anthropic', 'claude-haiku-4-5', 'Claude Haiku 4.5', {
    upstream: 'claude-haiku-4-5-20251001',
    in: 100,
    out: 500,
    cached: 10,
    cacheWrite: 125,
    cacheWrite1h: 200,
    ctx: 200_000,
    maxOut: 64_000,
    vision: true,
    reasoning: true,
    description: 'The fastest Claude with near-frontier intelligence.',
    override: THINKING_JSON,
  }),
  chat('anthropic', 'claude-3-7-sonnet', 'Claude Sonnet 3.7', {
    upstream: 'claude-3-7-sonnet-20250219',
    in: 300,
    out: 1500,
    cached: 30,
    cacheWrite: 375,
    cacheWrite1h: 600,
    ctx: 200_000,
    maxOut: 64_000,
    vision: true,
    reasoning: true,
    availability: 'RETIRING',
    description: 'Previous-generation Sonnet; deprecated by Anthropic.',
    override: THINKING_NO_JSON,
  }),
  chat('anthropic', 'claude-3-5-haiku', 'Claude Haiku 3.5', {
    upstream: 'claude-3-5-haiku-20241022',
    in: 80,
    out: 400,
    cached: 8,
    cacheWrite: 100,
    cacheWrite1h: 160,
    ctx: 200_000,
    maxOut: 8192,
    vision: true,
    description: 'Previous-generation fast Claude.',
    override: { flags: { jsonSchema: false } },
  }),

  // Google Gemini API
  chat('google', 'gemini-2.5-pro', 'Gemini 2.5 Pro', {
    in: 125,
    out: 1000,
    ctx: 1_048_576,
    maxOut: 65_536,
    vision: true,
    reasoning: true,
    description: "Google's most capable thinking model (price for prompts up to 200k tokens).",
  }),
  chat('google', 'gemini-2.5-flash', 'Gemini 2.5 Flash', {
    in: 30,
    out: 250,
    ctx: 1_048_576,
    maxOut: 65_536,
    vision: true,
    reasoning: true,
    description: 'Hybrid reasoning model with a 1M-token context.',
  }),
  chat('google', 'gemini-2.5-flash-lite', 'Gemini 2.5 Flash-Lite', {
    in: 10,
    out: 40,
    ctx: 1_048_576,
    maxOut: 65_536,
    vision: true,
    description: 'The smallest, most cost-effective Gemini 2.5.',
  }),
  chat('google', 'gemini-2.0-flash', 'Gemini 2.0 Flash', {
    in: 10,
    out: 40,
    ctx: 1_048_576,
    maxOut: 8192,
    vision: true,
    description: 'Balanced multimodal model built for agents.',
  }),
  embedding('google', 'gemini-embedding-001', 'Gemini Embedding', 15, 2048, 'State-of-the-art multilingual text embeddings.'),

  // OpenRouter (routes to many vendors; prices as listed there)
  chat('openrouter', 'meta-llama/llama-3.3-70b-instruct', 'Llama 3.3 70B Instruct (OpenRouter)', {
    in: 13,
    out: 39,
    ctx: 131_072,
    maxOut: 16_384,
    description: 'Meta Llama 3.3 70B through OpenRouter.',
  }),
  chat('openrouter', 'deepseek/deepseek-chat-v3.1', 'DeepSeek V3.1 (OpenRouter)', {
    in: 20,
    out: 80,
    ctx: 163_840,
    maxOut: 32_768,
    reasoning: true,
    description: 'DeepSeek V3.1 hybrid reasoning model through OpenRouter.',
  }),
  chat('openrouter', 'qwen/qwen3-235b-a22b-2507', 'Qwen3 235B A22B (OpenRouter)', {
    in: 13,
    out: 60,
    ctx: 262_144,
    maxOut: 32_768,
    description: 'Alibaba Qwen3 mixture-of-experts model through OpenRouter.',
  }),
  chat('openrouter', 'moonshotai/kimi-k2', 'Kimi K2 (OpenRouter)', {
    in: 60,
    out: 250,
    ctx: 131_072,
    maxOut: 16_384,
    description: 'Moonshot AI Kimi K2 agentic model through OpenRouter.',
  }),
  chat('openrouter', 'z-ai/glm-4.6', 'GLM 4.6 (OpenRouter)', {
    in: 60,
    out: 220,
    ctx: 202_752,
    maxOut: 65_536,
    reasoning: true,
    description: 'Zhipu GLM 4.6 through OpenRouter.',
  }),

  // Groq
  chat('groq', 'llama-3.3-70b-versatile', 'Llama 3.3 70B Versatile (Groq)', {
    in: 59,
    out: 79,
    ctx: 131_072,
    maxOut: 32_768,
    description: 'Meta Llama 3.3 70B at Groq speed.',
  }),
  chat('groq', 'llama-3.1-8b-instant', 'Llama 3.1 8B Instant (Groq)', { in: 5, out: 8, ctx: 131_072, maxOut: 131_072, description: 'Small, very fast Llama.' }),
  chat('groq', 'openai/gpt-oss-120b', 'GPT-OSS 120B (Groq)', {
    in: 15,
    out: 75,
    ctx: 131_072,
    maxOut: 65_536,
    reasoning: true,
    description: "OpenAI's open-weight 120B reasoning model on Groq.",
    override: { flags: { reasoning: 'effort', reasoningEfforts: ['low', 'medium', 'high'] } },
  }),
  chat('groq', 'openai/gpt-oss-20b', 'GPT-OSS 20B (Groq)', {
    in: 10,
    out: 50,
    ctx: 131_072,
    maxOut: 65_536,
    reasoning: true,
    description: "OpenAI's open-weight 20B reasoning model on Groq.",
    override: { flags: { reasoning: 'effort', reasoningEfforts: ['low', 'medium', 'high'] } },
  }),
  chat('groq', 'meta-llama/llama-4-scout-17b-16e-instruct', 'Llama 4 Scout (Groq)', {
    in: 11,
    out: 34,
    ctx: 131_072,
    maxOut: 8192,
    vision: true,
    description: 'Meta Llama 4 Scout multimodal model on Groq.',
  }),
  chat('groq', 'meta-llama/llama-4-maverick-17b-128e-instruct', 'Llama 4 Maverick (Groq)', {
    in: 20,
    out: 60,
    ctx: 131_072,
    maxOut: 8192,
    vision: true,
    description: 'Meta Llama 4 Maverick multimodal model on Groq.',
  }),
  chat('groq', 'qwen/qwen3-32b', 'Qwen3 32B (Groq)', {
    in: 29,
    out: 59,
    ctx: 131_072,
    maxOut: 40_960,
    reasoning: true,
    description: 'Alibaba Qwen3 32B on Groq.',
  }),
  chat('groq', 'moonshotai/kimi-k2-instruct-0905', 'Kimi K2 (Groq)', {
    in: 100,
    out: 300,
    ctx: 262_144,
    maxOut: 16_384,
    description: 'Moonshot AI Kimi K2 on Groq.',
  }),

  // Mistral AI
  chat('mistral', 'mistral-large-latest', 'Mistral Large', {
    in: 200,
    out: 600,
    ctx: 131_072,
    maxOut: 32_768,
    description: "Mistral's top-tier model for complex tasks.",
  }),
  chat('mistral', 'mistral-medium-latest', 'Mistral Medium 3', {
    in: 40,
    out: 200,
    ctx: 131_072,
    maxOut: 32_768,
    vision: true,
    description: 'Frontier-class multimodal model at a medium price.',
  }),
  chat('mistral', 'mistral-small-latest', 'Mistral Small 3.2', {
    in: 10,
    out: 30,
    ctx: 131_072,
    maxOut: 32_768,
    vision: true,
    description: 'Efficient small multimodal model.',
  }),
  chat('mistral', 'codestral-latest', 'Codestral', {
    in: 30,
    out: 90,
    ctx: 256_000,
    maxOut: 32_768,
    description: 'Model specialised for code completion and generation.',
  }),
  chat('mistral', 'magistral-medium-latest', 'Magistral Medium', {
    in: 200,
    out: 500,
    ctx: 40_000,
    maxOut: 40_000,
    reasoning: true,
    description: "Mistral's reasoning model.",
  }),
  embedding('mistral', 'mistral-embed', 'Mistral Embed', 10, 8192, 'Mistral text embeddings.'),

  // DeepSeek
  chat('deepseek', 'deepseek-chat', 'DeepSeek V3.2 Chat', {
    in: 28,
    out: 42,
    ctx: 128_000,
    maxOut: 8192,
    description: 'DeepSeek V3.2 in non-thinking mode (cache-miss input price).',
  }),
  chat('deepseek', 'deepseek-reasoner', 'DeepSeek V3.2 Reasoner', {
    in: 28,
    out: 42,
    ctx: 128_000,
    maxOut: 64_000,
    reasoning: true,
    tools: false,
    description: 'DeepSeek V3.2 in thinking mode.',
  }),

  // xAI
  chat('xai', 'grok-4', 'Grok 4', {
    upstream: 'grok-4-0709',
    in: 300,
    out: 1500,
    ctx: 256_000,
    maxOut: 64_000,
    vision: true,
    reasoning: true,
    description: "xAI's flagship reasoning model.",
    override: NO_TEMPERATURE,
  }),
  chat('xai', 'grok-4-fast', 'Grok 4 Fast', {
    upstream: 'grok-4-fast-reasoning',
    in: 20,
    out: 50,
    ctx: 2_000_000,
    maxOut: 30_000,
    vision: true,
    reasoning: true,
    description: 'Cost-efficient Grok with a 2M-token context.',
  }),
  chat('xai', 'grok-3-mini', 'Grok 3 Mini', {
    in: 30,
    out: 50,
    ctx: 131_072,
    maxOut: 32_768,
    reasoning: true,
    description: 'Lightweight thinking model.',
    override: { flags: { reasoning: 'effort', reasoningEfforts: ['low', 'high'] } },
  }),
  chat('xai', 'grok-code-fast-1', 'Grok Code Fast 1', {
    in: 20,
    out: 150,
    ctx: 256_000,
    maxOut: 10_000,
    reasoning: true,
    description: 'Speedy reasoning model for agentic coding.',
  }),
];

const MODE_FIXED = { extra: { mode: null } };

/*
 * GPT Image 1 is billed by tokens (https://platform.openai.com/docs/pricing, "Image tokens"): text input $5.00, image
 * input $10.00, image output $40.00 per 1M tokens. One image's output tokens by quality and size are OpenAI's table in
 * https://platform.openai.com/docs/guides/image-generation ("Cost and latency"). OpenAI publishes no rule for a source
 * image's tokens; reported usage fits 65 tokens plus 129 per 512px tile with the shortest side scaled to 512px within
 * 2048x2048 (194 for a 1024x1024 source: https://community.openai.com/t/vision-pricing-calculator-inaccurate-resizing-rounding-vs-api-costs/1281361),
 * so a source is reserved at that rule's most, 4 tiles: 581 tokens. The charge is always the usage OpenAI reports.
 * The 4.2-cent `image` price is OpenAI's per-image list price at medium 1024x1024, kept as the rate clients show.
 */
const GPT_IMAGE_1 = {
  flags: {
    imageTokens: {
      output: {
        low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
        medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
        high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
      },
      sourceImageMax: 581,
    },
  },
  controls: { quality: { type: 'enum' as const, label: 'Quality', values: ['low', 'medium', 'high', 'auto'], default: 'auto' } },
};
/**
 * DALL-E 3 is sold at standard quality only: 4 cents at 1024x1024 (https://platform.openai.com/docs/pricing, "Image
 * generation"); hd costs twice that, so it is not offered rather than billed at the standard price.
 */
const DALL_E_3 = { controls: { quality: { type: 'enum' as const, label: 'Quality', values: ['standard'], default: 'standard' } } };

export const VENDOR_MEDIA_MODELS: SeedModel[] = [
  // Images
  image(
    'openai',
    'gpt-image-1',
    'GPT Image 1',
    4.2,
    'OpenAI image generation and editing, billed by the tokens each image uses (quality low, medium, high or auto).',
    {
      edit: true,
      tokens: { textIn: 500, imageIn: 1000, imageOut: 4000 },
      override: GPT_IMAGE_1,
    },
  ),
  image('openai', 'dall-e-3', 'DALL·E 3', 4, 'OpenAI DALL·E 3 (standard 1024×1024 price); one image per call.', { maxBatch: 1, override: DALL_E_3 }),
  // Google shut Imagen 4 down on the Gemini API on 2026-08-17 (https://ai.google.dev/gemini-api/docs/deprecations);
  // its migration guide (https://firebase.google.com/docs/ai-logic/imagen-models-migration) names the successors.
  retired(
    image('google', 'imagen-4', 'Imagen 4', 4, "Google's text-to-image model (shut down by Google).", { upstream: 'imagen-4.0-generate-001' }),
    'google/gemini-3.1-flash-image',
  ),
  retired(
    image('google', 'imagen-4-fast', 'Imagen 4 Fast', 2, 'Faster, cheaper Imagen 4 (shut down by Google).', { upstream: 'imagen-4.0-fast-generate-001' }),
    'google/gemini-3.1-flash-image',
  ),
  retired(
    image('google', 'imagen-4-ultra', 'Imagen 4 Ultra', 6, 'Highest-fidelity Imagen 4 (shut down by Google).', {
      upstream: 'imagen-4.0-ultra-generate-001',
      maxBatch: 1,
    }),
    'google/gemini-3-pro-image',
  ),
  image('google', 'gemini-2.5-flash-image', 'Gemini 2.5 Flash Image', 3.9, 'Conversational image generation and editing ("nano banana").', { edit: true }),
  // Google prices these by token (image output $60 and $120 per 1M, 1120 tokens a 1K image); the per-image prices are
  // the ones https://ai.google.dev/gemini-api/docs/pricing publishes for the 1K images the adapter asks for. Their
  // thinking tokens, billed by Google at the text output price, are not in them.
  image(
    'google',
    'gemini-3.1-flash-image',
    'Gemini 3.1 Flash Image',
    6.7,
    'Fast image generation and editing with sharp text rendering ("nano banana 2"), 1K images.',
    { edit: true },
  ),
  image('google', 'gemini-3-pro-image', 'Gemini 3 Pro Image', 13.4, 'Highest-fidelity Gemini image generation and editing ("nano banana pro"), 1K images.', {
    edit: true,
  }),
  image('stability', 'stable-image-ultra', 'Stable Image Ultra', 8, "Stability AI's highest-quality image service.", { upstream: 'ultra' }),
  image('stability', 'stable-image-core', 'Stable Image Core', 3, 'Fast, affordable Stability image service.', { upstream: 'core' }),
  image('stability', 'sd3.5-large', 'Stable Diffusion 3.5 Large', 6.5, 'Stable Diffusion 3.5 Large.', { edit: true }),
  image('stability', 'sd3.5-large-turbo', 'Stable Diffusion 3.5 Large Turbo', 4, 'Distilled SD 3.5 Large in a few steps.', { edit: true }),
  image('stability', 'sd3.5-medium', 'Stable Diffusion 3.5 Medium', 3.5, 'Stable Diffusion 3.5 Medium.', { edit: true }),
  image('bfl', 'flux-pro-1.1', 'FLUX1.1 [pro]', 4, 'Black Forest Labs FLUX1.1 pro.'),
  image('bfl', 'flux-pro-1.1-ultra', 'FLUX1.1 [pro] Ultra', 6, 'FLUX1.1 pro at up to 4 megapixels.'),
  image('bfl', 'flux-dev', 'FLUX.1 [dev]', 2.5, 'FLUX.1 dev.'),
  image('bfl', 'flux-kontext-pro', 'FLUX.1 Kontext [pro]', 4, 'In-context image generation and editing.', { edit: true }),
  image('bfl', 'flux-kontext-max', 'FLUX.1 Kontext [max]', 8, 'Maximum-quality Kontext with better typography.', { edit: true }),
  image('ideogram', 'v3-turbo', 'Ideogram 3.0 Turbo', 3, 'Ideogram 3.0 at turbo speed.', { upstream: 'V_3_TURBO' }),
  image('ideogram', 'v3', 'Ideogram 3.0', 6, 'Ideogram 3.0, strong at text in images.', { upstream: 'V_3' }),
  image('ideogram', 'v3-quality', 'Ideogram 3.0 Quality', 9, 'Ideogram 3.0 at quality speed.', { upstream: 'V_3_QUALITY' }),
  image('recraft', 'recraftv3', 'Recraft V3', 4, 'Recraft V3 raster images.'),
  image('recraft', 'recraftv3-vector', 'Recraft V3 Vector', 8, 'Recraft V3 vector illustrations (SVG).', { upstream: 'recraftv3-vector' }),

  // Video (per second of output)
  video('openai', 'sora-2', 'Sora 2', 10, 'OpenAI Sora 2 video with synchronised audio (720p); disabled until a Sora adapter exists.', { status: 'DISABLED' }),
  video('openai', 'sora-2-pro', 'Sora 2 Pro', 30, 'Higher-quality Sora 2 (720p); disabled until a Sora adapter exists.', { status: 'DISABLED' }),
  video('google', 'veo-3', 'Veo 3', 40, 'Google Veo 3 with native audio.', { upstream: 'veo-3.0-generate-001' }),
  video('google', 'veo-3-fast', 'Veo 3 Fast', 15, 'Faster, cheaper Veo 3.', { upstream: 'veo-3.0-fast-generate-001' }),
  video('google', 'veo-2', 'Veo 2', 35, 'Google Veo 2 (silent).', { upstream: 'veo-2.0-generate-001', override: { extra: { resolution: null } } }),
  video('kling', 'kling-v2-1-master', 'Kling 2.1 Master', 28, 'Kling 2.1 Master: top motion quality.', { override: MODE_FIXED }),
  video('kling', 'kling-v2-1', 'Kling 2.1 Standard', 5.6, 'Kling 2.1 in standard mode (720p).', {
    override: { ...MODE_FIXED, flags: { upstreamParams: { mode: 'std' } } },
  }),
  video('kling', 'kling-v2-1-pro', 'Kling 2.1 Pro', 9.8, 'Kling 2.1 in professional mode (1080p).', {
    upstream: 'kling-v2-1',
    override: { extra: { mode: null }, flags: { upstreamParams: { mode: 'pro' } } },
  }),
  video('runway', 'gen4_turbo', 'Runway Gen-4 Turbo', 5, 'Runway Gen-4 Turbo image-to-video.'),
  video('runway', 'gen3a_turbo', 'Runway Gen-3 Alpha Turbo', 5, 'Runway Gen-3 Alpha Turbo.'),
  // 768P: $0.28 a 6-second clip; 1080P (6-second clips only): $0.49.
  video('minimax', 'hailuo-02', 'Hailuo 02', 4.67, 'MiniMax Hailuo 02 at 768p, or 1080p (6-second clips) with extra.resolution.', {
    upstream: 'MiniMax-Hailuo-02',
    override: { extra: { resolution: { values: ['768P', '1080P'], prices: { '1080P': { second: 8.17 } } } } },
  }),

  // Speech and music
  speech('openai', 'gpt-4o-mini-tts', 'GPT-4o mini TTS', { minute: 1.5 }, 'Steerable text to speech (estimated per minute of audio).'),
  speech('openai', 'tts-1', 'TTS 1', { '1k_chars': 1.5 }, 'Fast OpenAI text to speech.'),
  speech('openai', 'tts-1-hd', 'TTS 1 HD', { '1k_chars': 3 }, 'Higher-quality OpenAI text to speech.'),
  speech('elevenlabs', 'eleven_multilingual_v2', 'Eleven Multilingual v2', { '1k_chars': 12 }, 'Lifelike speech in 29 languages.'),
  speech('elevenlabs', 'eleven_flash_v2_5', 'Eleven Flash v2.5', { '1k_chars': 6 }, 'Ultra-low-latency speech in 32 languages.'),
  speech('elevenlabs', 'eleven_turbo_v2_5', 'Eleven Turbo v2.5', { '1k_chars': 6 }, 'Balanced quality and latency.'),
  speech('elevenlabs', 'eleven_v3', 'Eleven v3', { '1k_chars': 12 }, 'Most expressive ElevenLabs voice model.', { status: 'BETA' }),
  speech('groq', 'playai-tts', 'PlayAI TTS (Groq)', { '1k_chars': 5 }, 'PlayAI Dialog text to speech on Groq; disabled until a Groq speech adapter exists.', {
    status: 'DISABLED',
  }),
  {
    provider: 'stability',
    name: 'stable-audio-2.5',
    displayName: 'Stable Audio 2.5',
    description: 'Music and sound from a text description; the model decides the length.',
    type: 'AUDIO',
    features: ['MUSIC'],
    inputModalities: ['text'],
    outputModalities: ['audio'],
    pricing: { currency: 'USD', note: USD_NOTE, generation: 20 },
  },
];
