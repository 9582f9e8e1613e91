import { GOOGLE_DEFAULT_ROOT, googleClient, googleError, isOk } from './api.js';
import type { UpstreamHttp } from '../upstream-http.js';
import { generateGeminiImage } from './images.js';
import { pollVeo, submitVeo } from './veo.js';
import type { ExtraKeys, MediaAdapter } from '../media/media-types.js';

export { GOOGLE_DEFAULT_ROOT } from './api.js';

/**
 * Google's media models on the Gemini API (generativelanguage.googleapis.com, `x-goog-api-key`), built from:
 * - Gemini image generation and editing: https://ai.google.dev/gemini-api/docs/image-generation (gemini-2.5-flash-image,
 *   gemini-3.1-flash-image, gemini-3-pro-image);
 * - Imagen's shutdown on the Gemini API on 2026-08-17: https://ai.google.dev/gemini-api/docs/deprecations (Google's
 *   migration guide, https://firebase.google.com/docs/ai-logic/imagen-models-migration, names the Gemini successors);
 * - Veo: https://ai.google.dev/gemini-api/docs/video and js-genai `generateVideosConfigToMldev` (August 2026);
 * - the REST discovery document https://generativelanguage.googleapis.com/$discovery/rest?version=v1beta
 *   (`models.operations` has get and list only: no cancel).
 * The account's base URL may be the OpenAI-compatible one used for text; the native root is derived from it.
 * Billing per Google's pricing page: Gemini image output per image, Veo per second.
 */
/**
 * The `extra` keys sent to Veo beside ours (under `parameters`). Google bills Veo per second at 720p and 1080p alike;
 * `sampleCount` is not taken: it makes Google bill several videos for the one the job delivers and charges.
 */
export const VEO_EXTRA: ExtraKeys = {
  resolution: { type: 'enum', values: ['720p', '1080p'] },
  personGeneration: { type: 'enum', values: ['allow_all', 'allow_adult', 'dont_allow'] },
};

export function createGoogleMediaAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const client = googleClient(options.defaultBaseUrl ?? GOOGLE_DEFAULT_ROOT, options.http);

  return {
    kind: 'google',
    needsCredential: true,
    extraKeys: { video: VEO_EXTRA },

    generateImage: (credential, request) => generateGeminiImage(client, credential, request),

    submitVideo: (credential, request) => submitVeo(client, credential, request),

    pollVideo: (credential, externalId, signal) => pollVeo(client, credential, externalId, signal),

    // No cancelVideo: the Gemini API cannot stop a Veo operation, so a cancelled job's operation runs on and is billed.

    async checkCredential(credential) {
      const response = await client.call(credential, 'GET', '/v1beta/models?pageSize=1');
      if (!isOk(response)) throw googleError(response, '');
    },
  };
}
