import { chat, embedding, image, speech, video, type SeedModel, type SeedProvider } from './seed-helpers.js';
import { VENDOR_MEDIA_MODELS, VENDOR_TEXT_MODELS } from './seed-vendors.js';

/** Providers: `local` is built in and ACTIVE; the others start INACTIVE until a working credential activates them. */
export const SEED_PROVIDERS: SeedProvider[] = [
  { slug: 'local', name: 'Local (built in)', website: null, builtIn: true },
  { slug: 'openai', name: 'OpenAI', website: 'https://openai.com' },
  { slug: 'anthropic', name: 'Anthropic', website: 'https://www.anthropic.com' },
  { slug: 'google', name: 'Google Gemini', website: 'https://ai.google.dev' },
  { slug: 'openrouter', name: 'OpenRouter', website: 'https://openrouter.ai' },
  { slug: 'groq', name: 'Groq', website: 'https://groq.com' },
  { slug: 'mistral', name: 'Mistral AI', website: 'https://mistral.ai' },
  { slug: 'deepseek', name: 'DeepSeek', website: 'https://www.deepseek.com' },
  { slug: 'xai', name: 'xAI', website: 'https://x.ai' },
  { slug: 'stability', name: 'Stability AI', website: 'https://stability.ai' },
  { slug: 'bfl', name: 'Black Forest Labs', website: 'https://bfl.ai' },
  { slug: 'ideogram', name: 'Ideogram', website: 'https://ideogram.ai' },
  { slug: 'recraft', name: 'Recraft', website: 'https://www.recraft.ai' },
  { slug: 'kling', name: 'Kling AI', website: 'https://klingai.com' },
  { slug: 'runway', name: 'Runway', website: 'https://runwayml.com' },
  { slug: 'minimax', name: 'MiniMax', website: 'https://www.minimax.io' },
  { slug: 'elevenlabs', name: 'ElevenLabs', website: 'https://elevenlabs.io' },
];

const LOCAL_NOTE = 'Built-in offline provider; priced like a small hosted model so usage is metered the same way';

/** The built-in offline provider: one model of every type, so the product works with no credentials. */
const LOCAL_MODELS: SeedModel[] = [
  {
    ...chat('local', 'text', 'Local Text', {
      upstream: 'local-text',
      in: 10,
      out: 40,
      ctx: 8192,
      maxOut: 4096,
      description: 'Deterministic offline text generation for development and demos: calls tools, reads images, answers JSON schemas.',
    }),
    // A TEXT model (the spec's one of every type) that also reads images, so tools and vision work offline.
    features: ['TEXT', 'VISION', 'TOOLS'],
    inputModalities: ['text', 'image'],
    pricing: { currency: 'USD', note: LOCAL_NOTE, '1m_input_tokens': 10, '1m_output_tokens': 40 },
  },
  {
    ...chat('local', 'vision', 'Local Vision', {
      upstream: 'local-vision',
      in: 15,
      out: 60,
      ctx: 32_768,
      maxOut: 4096,
      vision: true,
      description: 'Offline multimodal model: reads text and images, calls tools, writes text (also used to enhance prompts).',
    }),
    pricing: { currency: 'USD', note: LOCAL_NOTE, '1m_input_tokens': 15, '1m_output_tokens': 60 },
  },
  {
    ...image('local', 'image', 'Local Image', 1, 'Deterministic offline PNG images.', { upstream: 'local-image' }),
    pricing: { currency: 'USD', note: LOCAL_NOTE, image: 1 },
  },
  {
    ...video('local', 'video', 'Local Video', 2, 'A short playable offline video clip.', { upstream: 'local-video' }),
    pricing: { currency: 'USD', note: LOCAL_NOTE, second: 2 },
  },
  {
    ...speech('local', 'speech', 'Local Speech', { '1k_chars': 1.5 }, 'Offline speech synthesis to WAV.', { upstream: 'local-speech' }),
    pricing: { currency: 'USD', note: LOCAL_NOTE, '1k_chars': 1.5 },
  },
  {
    provider: 'local',
    name: 'music',
    upstreamModel: 'local-music',
    displayName: 'Local Music',
    description: 'Offline instrumental music to WAV; the model decides the length.',
    type: 'AUDIO',
    features: ['MUSIC'],
    inputModalities: ['text'],
    outputModalities: ['audio'],
    pricing: { currency: 'USD', note: LOCAL_NOTE, generation: 5 },
  },
  {
    ...embedding(
      'local',
      'embed',
      'Local Embed',
      2,
      8192,
      'Deterministic offline text embeddings (256 dimensions, shorter with dimensions): texts sharing words and word parts are close.',
    ),
    upstreamModel: 'local-embed',
    pricing: { currency: 'USD', note: LOCAL_NOTE, '1m_input_tokens': 2 },
  },
];

export const SEED_MODELS: SeedModel[] = [...LOCAL_MODELS, ...VENDOR_TEXT_MODELS, ...VENDOR_MEDIA_MODELS];
