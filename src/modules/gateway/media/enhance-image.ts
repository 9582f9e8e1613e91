import type { Principal } from '../../../platform/auth/plugin.js';
import { DEFAULT_FETCH_MAX_BYTES, DEFAULT_FETCH_TIMEOUT_MS } from '../../../platform/net/safe-fetch.js';
import type { ImageAnswer, ImageGateway } from './image.js';
import { pngSize } from './image.js';
import type { MediaCallOptions, MediaGatewayDeps } from './common.js';

export interface EnhanceImageBody {
  model: string;
  imageUrl: string;
  instruction?: string;
}

const DEFAULT_INSTRUCTION = 'Enhance this image: sharper details, balanced colours and exposure, less noise; keep the content and composition.';
/** How far the result may move from the source (0 keeps it, 1 ignores it). */
const ENHANCE_STRENGTH = 0.35;
const CAPTION = 'Enhanced image';

/**
 * `POST /v1/ai/enhance/image`: the source (a data: URL, one of our raw files or an https URL read through the SSRF-safe
 * fetcher within 8 s and 15 MB; anything unreadable is a 400 naming the fetch status) goes to an image model as the
 * init image; the result is saved to the library tagged `enhanced` with a neutral caption.
 */
export function createEnhanceImage(deps: Pick<MediaGatewayDeps, 'files' | 'catalog'>, images: ImageGateway) {
  return {
    async enhance(principal: Principal, body: EnhanceImageBody, options: MediaCallOptions = {}): Promise<ImageAnswer> {
      const model = await deps.catalog.resolveForGateway(body.model);
      const source = await deps.files.readSource(body.imageUrl, {
        accept: ['image'],
        what: 'the image (imageUrl)',
        timeoutMs: DEFAULT_FETCH_TIMEOUT_MS,
        maxBytes: DEFAULT_FETCH_MAX_BYTES,
      });
      const size = pngSize(source.bytes);
      // The source's own size, scaled (keeping its shape) into the model's bounds; other models snap it themselves.
      const bound = (key: 'width' | 'height', field: 'min' | 'max') => {
        const value = (model.capabilities.controls[key] as Record<string, unknown> | undefined)?.[field];
        return typeof value === 'number' ? value : undefined;
      };
      let width = size?.width;
      let height = size?.height;
      if (width && height) {
        const shrink = Math.min(1, (bound('width', 'max') ?? width) / width, (bound('height', 'max') ?? height) / height);
        const grow = Math.max(1, (bound('width', 'min') ?? 0) / (width * shrink), (bound('height', 'min') ?? 0) / (height * shrink));
        width = Math.max(1, Math.round(width * shrink * grow));
        height = Math.max(1, Math.round(height * shrink * grow));
      }
      const dataUrl = `data:${source.contentType};base64,${source.bytes.toString('base64')}`;
      return images.generateSync(
        principal,
        {
          model: body.model,
          prompt: body.instruction ?? DEFAULT_INSTRUCTION,
          width,
          height,
          count: 1,
          initImageUrl: dataUrl,
          strength: ENHANCE_STRENGTH,
        },
        { ...options, tags: ['enhanced'], caption: CAPTION },
      );
    },
  };
}
