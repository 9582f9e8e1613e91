import { encodePng } from '../../../src/platform/media/png.js';

/** Real media bytes for the media fakes to answer with; a leaf module, so a fake importing it imports nothing that imports the fake. */

/** A real PNG of one colour (cheap at any size). */
export function solidPng(width: number, height: number, shade = 128): Buffer {
  return encodePng(width, height, new Uint8Array(width * height * 3).fill(shade));
}

/** A real MP3 stream: an ID3v2 tag and silent MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz). */
export function silentMp3(frames = 20): Buffer {
  const id3 = Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]);
  const frame = Buffer.alloc(417);
  frame.writeUInt32BE(0xfffb9064, 0);
  return Buffer.concat([id3, ...Array.from({ length: frames }, () => frame)]);
}
