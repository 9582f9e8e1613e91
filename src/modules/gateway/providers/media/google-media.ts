import { GOOGLE_DEFAULT_ROOT, googleClient, googleError, isOk } from './google-api.js';
import { generateGeminiImage, generateImagen, isImagen } from './google-images.js';
import { pollVeo, submitVeo } from './google-veo.js';
import type { MediaAdapter } from './media-types.js';

export { GOOGLE_DEFAULT_ROOT } from './google-api.js';

/**
 * Google's media models on the Gemini API (generativelanguage.googleapis.com, `x-goog-api-key`), built from:
 * - Imagen: https://ai.google.dev/gemini-api/docs/imagen (Imagen 4 Standard, Fast, Ultra; as of May 2026), wire names
 *   from the Gemini API mode of the official JS SDK (github.com/googleapis/js-genai, `generateImagesConfigToMldev`,
 *   v1.x before August 2026, when the SDK stopped offering Imagen on the Gemini API);
 * - Gemini image generation and editing: https://ai.google.dev/gemini-api/docs/image-generation (gemini-2.5-flash-image);
 * - Veo: https://ai.google.dev/gemini-api/docs/video and js-genai `generateVideosConfigToMldev` (August 2026);
 * - the REST discovery document https://generativelanguage.googleapis.com/$discovery/rest?version=v1beta
 *   (`models.operations` has get and list only: no cancel).
 * The account's base URL may be the OpenAI-compatible one used for text; the native root is derived from it.
 * Billing per Google's pricing page: Imagen per image, Gemini image output per image (1290 output tokens), Veo per second.
 */
export function createGoogleMediaAdapter(options: { defaultBaseUrl?: string } = {}): MediaAdapter {
  const client = googleClient(options.defaultBaseUrl ?? GOOGLE_DEFAULT_ROOT);

  return {
    kind: 'google',
    needsCredential: true,

    generateImage: (credential, request) => (isImagen(request.model) ? generateImagen(client, credential, request) : generateGeminiImage(client, credential, request)),

    submitVideo: (credential, request) => submitVeo(client, credential, request),

    pollVideo: (credential, externalId, signal) => pollVeo(client, credential, externalId, signal),

    /** The Gemini API offers no way to stop a Veo operation: it runs to its end at Google and its result is ignored. */
    async cancelVideo() {},

    async checkCredential(credential) {
      const response = await client.call(credential, 'GET', '/v1beta/models?pageSize=1');
      if (!isOk(response)) throw googleError(response, '');
    },
  };
}
