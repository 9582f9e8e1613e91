/**
 * Image sizes a model accepts, and snapping a requested width x height onto them. The API has no named ratio field:
 * a size the model does not take is snapped to its nearest aspect ratio (and for fixed menus, then to the nearest
 * area), so the returned pixels may differ from the requested ones. Pure functions, no I/O.
 */

export type SizeRule =
  /** Any size within bounds (rounded to a multiple when the API needs one); everything else passes through unchanged. */
  | { kind: 'free'; min?: number; max?: number; multipleOf?: number }
  /** A fixed menu of sizes (e.g. the three sizes of GPT Image and DALL·E 3). */
  | { kind: 'menu'; sizes: ReadonlyArray<readonly [number, number]> }
  /** Named aspect ratios, each rendered at the provider's pixel size for it (e.g. Imagen's 1:1, 3:4, 4:3, 9:16, 16:9). */
  | { kind: 'ratios'; ratios: ReadonlyArray<{ ratio: string; width: number; height: number }> };

export interface SnappedSize {
  width: number;
  height: number;
  /** The aspect ratio used, reduced (`16:9`), or the named ratio of a `ratios` rule. */
  aspectRatio: string;
  /** True when the size differs from the one requested. */
  snapped: boolean;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** `1920 x 1080` -> `16:9`. */
export function reducedRatio(width: number, height: number): string {
  const d = gcd(Math.round(width), Math.round(height)) || 1;
  return `${Math.round(width) / d}:${Math.round(height) / d}`;
}

/** How far apart two aspect ratios are (symmetric: 2:1 is as far from 1:1 as 1:2 is). */
const ratioDistance = (w1: number, h1: number, w2: number, h2: number) => Math.abs(Math.log(w1 / h1) - Math.log(w2 / h2));
const areaDistance = (w1: number, h1: number, w2: number, h2: number) => Math.abs(Math.log((w1 * h1) / (w2 * h2)));

/**
 * The candidate closest to `width x height`: nearest aspect ratio first, then nearest area, then the earlier one.
 * Ratios within 1% count as equal, so 1366x768 and 1920x1080 both find 16:9.
 */
export function nearestSize<T extends { width: number; height: number }>(candidates: readonly T[], width: number, height: number): T {
  if (candidates.length === 0) throw new RangeError('no candidate sizes');
  let best = candidates[0]!;
  for (const candidate of candidates.slice(1)) {
    const ratioGap = ratioDistance(width, height, candidate.width, candidate.height) - ratioDistance(width, height, best.width, best.height);
    if (ratioGap < -0.01) best = candidate;
    else if (
      Math.abs(ratioGap) <= 0.01 &&
      areaDistance(width, height, candidate.width, candidate.height) < areaDistance(width, height, best.width, best.height)
    ) {
      best = candidate;
    }
  }
  return best;
}

/** Snaps a requested size onto what the rule accepts. */
export function snapImageSize(rule: SizeRule, width: number, height: number): SnappedSize {
  if (!(width > 0 && height > 0)) throw new RangeError(`size must be positive (got ${width}x${height})`);
  switch (rule.kind) {
    case 'free': {
      const step = rule.multipleOf ?? 1;
      const clamp = (value: number) => {
        let v = Math.round(value / step) * step;
        if (rule.min !== undefined) v = Math.max(v, Math.ceil(rule.min / step) * step);
        if (rule.max !== undefined) v = Math.min(v, Math.floor(rule.max / step) * step);
        return v;
      };
      const w = clamp(width);
      const h = clamp(height);
      return { width: w, height: h, aspectRatio: reducedRatio(w, h), snapped: w !== width || h !== height };
    }
    case 'menu': {
      const chosen = nearestSize(
        rule.sizes.map(([sw, sh]) => ({ width: sw, height: sh })),
        width,
        height,
      );
      return {
        width: chosen.width,
        height: chosen.height,
        aspectRatio: reducedRatio(chosen.width, chosen.height),
        snapped: chosen.width !== width || chosen.height !== height,
      };
    }
    case 'ratios': {
      const chosen = nearestSize(rule.ratios, width, height);
      return { width: chosen.width, height: chosen.height, aspectRatio: chosen.ratio, snapped: chosen.width !== width || chosen.height !== height };
    }
  }
}

const GPT_IMAGE_MENU: SizeRule = {
  kind: 'menu',
  sizes: [
    [1024, 1024],
    [1536, 1024],
    [1024, 1536],
  ],
};
const DALL_E_3_MENU: SizeRule = {
  kind: 'menu',
  sizes: [
    [1024, 1024],
    [1792, 1024],
    [1024, 1792],
  ],
};
const DALL_E_2_MENU: SizeRule = {
  kind: 'menu',
  sizes: [
    [256, 256],
    [512, 512],
    [1024, 1024],
  ],
};
const IMAGEN_RATIOS: SizeRule = {
  kind: 'ratios',
  ratios: [
    { ratio: '1:1', width: 1024, height: 1024 },
    { ratio: '3:4', width: 896, height: 1280 },
    { ratio: '4:3', width: 1280, height: 896 },
    { ratio: '9:16', width: 768, height: 1408 },
    { ratio: '16:9', width: 1408, height: 768 },
  ],
};
const GEMINI_IMAGE_RATIOS: SizeRule = {
  kind: 'ratios',
  ratios: [
    { ratio: '1:1', width: 1024, height: 1024 },
    { ratio: '2:3', width: 832, height: 1248 },
    { ratio: '3:2', width: 1248, height: 832 },
    { ratio: '3:4', width: 864, height: 1184 },
    { ratio: '4:3', width: 1184, height: 864 },
    { ratio: '4:5', width: 896, height: 1152 },
    { ratio: '5:4', width: 1152, height: 896 },
    { ratio: '9:16', width: 768, height: 1344 },
    { ratio: '16:9', width: 1344, height: 768 },
    { ratio: '21:9', width: 1536, height: 672 },
  ],
};
const STABILITY_RATIOS: SizeRule = {
  kind: 'ratios',
  ratios: [
    { ratio: '1:1', width: 1024, height: 1024 },
    { ratio: '16:9', width: 1344, height: 768 },
    { ratio: '21:9', width: 1536, height: 640 },
    { ratio: '2:3', width: 832, height: 1216 },
    { ratio: '3:2', width: 1216, height: 832 },
    { ratio: '4:5', width: 896, height: 1088 },
    { ratio: '5:4', width: 1088, height: 896 },
    { ratio: '9:16', width: 768, height: 1344 },
    { ratio: '9:21', width: 640, height: 1536 },
  ],
};
const IDEOGRAM_RATIOS: SizeRule = {
  kind: 'ratios',
  ratios: [
    { ratio: '1:1', width: 1024, height: 1024 },
    { ratio: '16:9', width: 1312, height: 736 },
    { ratio: '9:16', width: 736, height: 1312 },
    { ratio: '4:3', width: 1152, height: 864 },
    { ratio: '3:4', width: 864, height: 1152 },
    { ratio: '3:2', width: 1248, height: 832 },
    { ratio: '2:3', width: 832, height: 1248 },
    { ratio: '16:10', width: 1280, height: 800 },
    { ratio: '10:16', width: 800, height: 1280 },
    { ratio: '3:1', width: 1536, height: 512 },
    { ratio: '1:3', width: 512, height: 1536 },
  ],
};
const FLUX_ULTRA_RATIOS: SizeRule = {
  kind: 'ratios',
  ratios: [
    { ratio: '1:1', width: 2048, height: 2048 },
    { ratio: '16:9', width: 2752, height: 1536 },
    { ratio: '9:16', width: 1536, height: 2752 },
    { ratio: '4:3', width: 2368, height: 1792 },
    { ratio: '3:4', width: 1792, height: 2368 },
    { ratio: '3:2', width: 2496, height: 1664 },
    { ratio: '2:3', width: 1664, height: 2496 },
    { ratio: '21:9', width: 3136, height: 1344 },
    { ratio: '9:21', width: 1344, height: 3136 },
  ],
};
const RECRAFT_MENU: SizeRule = {
  kind: 'menu',
  sizes: [
    [1024, 1024],
    [1365, 1024],
    [1024, 1365],
    [1536, 1024],
    [1024, 1536],
    [1820, 1024],
    [1024, 1820],
    [1024, 2048],
    [2048, 1024],
    [1434, 1024],
    [1024, 1434],
    [1024, 1280],
    [1280, 1024],
    [1024, 1707],
    [1707, 1024],
  ],
};

/**
 * The size rule of a model, by provider and upstream model name. Families not listed pass sizes through unchanged
 * (the local provider draws any size; OpenAI-compatible servers take what they take).
 */
export function imageSizeRule(providerSlug: string, upstreamModel: string): SizeRule {
  const model = upstreamModel.toLowerCase();
  if (model.startsWith('gpt-image')) return GPT_IMAGE_MENU;
  if (model === 'dall-e-3') return DALL_E_3_MENU;
  if (model === 'dall-e-2') return DALL_E_2_MENU;
  if (model.startsWith('imagen-')) return IMAGEN_RATIOS;
  if (model.startsWith('gemini-') && model.includes('image')) return GEMINI_IMAGE_RATIOS;
  if (model.includes('flux') && model.includes('ultra')) return FLUX_ULTRA_RATIOS;
  if (model.includes('flux')) return { kind: 'free', min: 256, max: 1440, multipleOf: 32 };
  if (model.startsWith('recraft')) return RECRAFT_MENU;
  if (providerSlug === 'stability') return STABILITY_RATIOS;
  if (providerSlug === 'ideogram') return IDEOGRAM_RATIOS;
  return { kind: 'free' };
}
