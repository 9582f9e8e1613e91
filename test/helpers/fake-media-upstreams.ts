/**
 * Local stand-ins for media providers, speaking their wire formats, each in its provider's folder
 * (`src/modules/gateway/providers/<slug>/*.fake.ts`) and re-exported here:
 * - OpenAI Images and speech (`openai/openai-media.fake.ts`): generations, edits and speech with the real per-model
 *   rules, GPT Image's `quality`, `size` and token `usage`, and OpenAI's errors.
 * - Runway (`runway/runway.fake.ts`) and ElevenLabs (`elevenlabs/elevenlabs.fake.ts`).
 * By default each behaves like the real API; `decide` overrides one request (an error, a hang).
 */

export type { MediaDecide, MediaFake, MediaFakeRequest, Override } from './fakes/media-server.js';

export { silentMp3, solidPng } from './fakes/media-bytes.js';

export {
  GPT_IMAGE_OUTPUT_TOKENS,
  OPENAI_MEDIA_ERRORS,
  sourceImageTokens,
  startFakeOpenAiMedia,
  type OpenAiMediaFakeOptions,
} from '../../src/modules/gateway/providers/openai/openai-media.fake.js';
export { startFakeRunway, type RunwayFake } from '../../src/modules/gateway/providers/runway/runway.fake.js';
export { ELEVENLABS_VOICES, startFakeElevenLabs } from '../../src/modules/gateway/providers/elevenlabs/elevenlabs.fake.js';
