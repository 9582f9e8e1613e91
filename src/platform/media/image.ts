import { encodePng, MAX_PNG_SIDE } from './png.js';
import { describeScene, renderScene } from './scene.js';

export interface GenerateImageInput {
  prompt: string;
  seed: number;
  width: number;
  height: number;
}

/** Largest image the local generator draws (pixels a side). */
export const MAX_GENERATED_SIDE = 4096;

/** A real PNG of exactly width x height, drawn from the prompt and seed alone: the same input gives the same bytes. */
export function generatePng({ prompt, seed, width, height }: GenerateImageInput): Buffer {
  const limit = Math.min(MAX_GENERATED_SIDE, MAX_PNG_SIDE);
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > limit || height > limit) {
    throw new RangeError(`image size must be 1-${limit} pixels a side (got ${width}x${height})`);
  }
  const pixels = new Uint8Array(width * height * 3);
  renderScene(describeScene(prompt, seed), width, height, 0, pixels, 3);
  return encodePng(width, height, pixels);
}
