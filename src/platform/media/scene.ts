import { hslToRgb, seededRandom } from './random.js';

type Rgb = [number, number, number];

interface Ridge {
  base: number;
  amplitude: number;
  frequency: number;
  phase: number;
  detail: number;
  color: Rgb;
  /** Horizontal drift in cycles per clip (parallax: nearer ridges move faster). */
  speed: number;
}

interface Orb {
  x: number;
  y: number;
  radius: number;
  color: Rgb;
  alpha: number;
  dx: number;
  dy: number;
}

/** A small landscape-like composition: a sky gradient, a sun, floating orbs and layered ridges. */
export interface Scene {
  skyTop: Rgb;
  skyBottom: Rgb;
  tilt: number;
  sun: { x: number; y: number; radius: number; color: Rgb; rise: number };
  orbs: Orb[];
  ridges: Ridge[];
}

/** The scene a prompt and seed describe; every choice comes from a generator seeded by both. */
export function describeScene(prompt: string, seed: number | string): Scene {
  const random = seededRandom('scene', prompt, seed);
  const words = prompt.trim().split(/\s+/).filter(Boolean);
  const hue = random.range(0, 360);
  const warm = random.next() < 0.5;
  const night = /\b(night|dark|moon|space|midnight|noir)\b/i.test(prompt);
  const skyTop = hslToRgb(hue + (warm ? 20 : -20), random.range(0.45, 0.8), night ? random.range(0.06, 0.14) : random.range(0.45, 0.65));
  const skyBottom = hslToRgb(hue + random.range(60, 150), random.range(0.5, 0.9), night ? random.range(0.18, 0.3) : random.range(0.7, 0.85));
  const sun = {
    x: random.range(0.15, 0.85),
    y: random.range(0.15, 0.45),
    radius: random.range(0.05, 0.12),
    color: hslToRgb(hue + 180 + random.range(-30, 30), 0.9, night ? 0.85 : 0.7),
    rise: random.range(-0.08, 0.08),
  };
  const orbCount = 2 + (words.length % 5) + random.int(0, 3);
  const orbs: Orb[] = Array.from({ length: orbCount }, () => ({
    x: random.range(0, 1),
    y: random.range(0.05, 0.6),
    radius: random.range(0.01, 0.06),
    color: hslToRgb(hue + random.range(-90, 90), random.range(0.5, 1), random.range(0.6, 0.9)),
    alpha: random.range(0.25, 0.7),
    dx: random.range(-0.15, 0.15),
    dy: random.range(-0.05, 0.05),
  }));
  const ridgeCount = 3 + random.int(0, 2);
  const ridges: Ridge[] = Array.from({ length: ridgeCount }, (_, i) => {
    const depth = (i + 1) / ridgeCount;
    return {
      base: 0.45 + depth * 0.4 + random.range(-0.04, 0.04),
      amplitude: random.range(0.03, 0.1) * (1.2 - depth * 0.5),
      frequency: random.range(1, 4) + i,
      phase: random.range(0, Math.PI * 2),
      detail: random.range(0.2, 0.5),
      color: hslToRgb(hue + 200 + i * random.range(5, 25), random.range(0.25, 0.6), (night ? 0.1 : 0.5) * (1 - depth * 0.7) + 0.05),
      speed: (0.1 + depth * 0.5) * (random.next() < 0.5 ? -1 : 1),
    };
  });
  return { skyTop, skyBottom, tilt: random.range(-0.3, 0.3), sun, orbs, ridges };
}

const smoothstep = (edge0: number, edge1: number, x: number) => {
  const t = Math.min(1, Math.max(0, (x - edge0) / (edge1 - edge0)));
  return t * t * (3 - 2 * t);
};

/**
 * Draws the scene at time `t` (0..1 through a clip; 0 for a still) into `out`, `channels` bytes a pixel
 * (3 for RGB, 4 for RGBA with opaque alpha).
 */
export function renderScene(scene: Scene, width: number, height: number, t: number, out: Uint8Array, channels: 3 | 4): void {
  const unit = Math.min(width, height);
  const sunX = scene.sun.x * width;
  const sunY = (scene.sun.y + scene.sun.rise * t) * height;
  const sunR = scene.sun.radius * unit;
  const glowScale2 = (sunR * 2.5) ** 2;
  const glowReach2 = (sunR * 6) ** 2;
  const orbs = scene.orbs.map((orb) => {
    const r = Math.max(1, orb.radius * unit);
    return {
      cx: ((((orb.x + orb.dx * t) % 1) + 1) % 1) * width,
      cy: (orb.y + orb.dy * t) * height,
      r,
      reach2: (r + 2) ** 2,
      color: orb.color,
      alpha: orb.alpha,
    };
  });
  // The top edge of each ridge for every column, computed once a frame.
  const tops = scene.ridges.map((ridge) => {
    const column = new Float32Array(width);
    const shift = ridge.phase + ridge.speed * t * Math.PI * 2;
    for (let x = 0; x < width; x++) {
      const u = x / width;
      const wave = Math.sin(u * ridge.frequency * Math.PI * 2 + shift) + ridge.detail * Math.sin(u * ridge.frequency * 5.3 * Math.PI * 2 + shift * 2.1);
      column[x] = (ridge.base - ridge.amplitude * wave) * height;
    }
    return column;
  });
  let o = 0;
  for (let y = 0; y < height; y++) {
    const v = y / height;
    for (let x = 0; x < width; x++) {
      const g = Math.min(1, Math.max(0, v + scene.tilt * (x / width - 0.5)));
      let r = scene.skyTop[0] + (scene.skyBottom[0] - scene.skyTop[0]) * g;
      let gr = scene.skyTop[1] + (scene.skyBottom[1] - scene.skyTop[1]) * g;
      let b = scene.skyTop[2] + (scene.skyBottom[2] - scene.skyTop[2]) * g;
      // The sun: a disc with a soft glow around it (negligible beyond six radii, so skipped there).
      const sdx = x - sunX;
      const sdy = y - sunY;
      const sunD2 = sdx * sdx + sdy * sdy;
      if (sunD2 < glowReach2) {
        const dist = Math.sqrt(sunD2);
        const glow = Math.exp(-(sunD2 / glowScale2)) * 0.45;
        const disc = 1 - smoothstep(sunR - 1.5, sunR + 1.5, dist);
        const sunMix = Math.min(1, disc + glow);
        r += (scene.sun.color[0] - r) * sunMix;
        gr += (scene.sun.color[1] - gr) * sunMix;
        b += (scene.sun.color[2] - b) * sunMix;
      }
      for (const orb of orbs) {
        const odx = x - orb.cx;
        const ody = y - orb.cy;
        const d2 = odx * odx + ody * ody;
        if (d2 > orb.reach2) continue;
        const a = orb.alpha * (1 - smoothstep(orb.r - 1.5, orb.r + 1.5, Math.sqrt(d2)));
        r += (orb.color[0] - r) * a;
        gr += (orb.color[1] - gr) * a;
        b += (orb.color[2] - b) * a;
      }
      for (let i = 0; i < tops.length; i++) {
        const top = tops[i]![x]!;
        if (y + 1 < top) continue;
        const color = scene.ridges[i]!.color;
        const edge = Math.min(1, y + 1 - top); // anti-aliased top edge
        const shade = 1 - Math.min(0.35, ((y - top) / height) * 0.8);
        r += (color[0] * shade - r) * edge;
        gr += (color[1] * shade - gr) * edge;
        b += (color[2] * shade - b) * edge;
      }
      out[o++] = r < 0 ? 0 : r > 255 ? 255 : Math.round(r);
      out[o++] = gr < 0 ? 0 : gr > 255 ? 255 : Math.round(gr);
      out[o++] = b < 0 ? 0 : b > 255 ? 255 : Math.round(b);
      if (channels === 4) out[o++] = 255;
    }
  }
}
