import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (ISO-HDLC, the one PNG and zip use). */
export function crc32(data: Uint8Array, initial = 0): number {
  let crc = (initial ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) crc = CRC_TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
export const MAX_PNG_SIDE = 8192;

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const FILTERS = [0, 1, 2, 3, 4] as const;

/**
 * Encodes 8-bit RGB pixels (row-major, 3 bytes a pixel) as a PNG. Each row gets the filter (None, Sub, Up, Average or
 * Paeth) with the smallest sum of absolute values, the usual heuristic; the output is deterministic.
 */
export function encodePng(width: number, height: number, rgb: Uint8Array): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > MAX_PNG_SIDE || height > MAX_PNG_SIDE) {
    throw new RangeError(`PNG size must be 1-${MAX_PNG_SIDE} pixels a side (got ${width}x${height})`);
  }
  const stride = width * 3;
  if (rgb.length !== stride * height) throw new RangeError(`expected ${stride * height} bytes of RGB, got ${rgb.length}`);
  const filtered = Buffer.alloc((stride + 1) * height);
  const candidate = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const row = y * stride;
    const prev = row - stride;
    let bestScore = Infinity;
    for (const filter of FILTERS) {
      let score = 0;
      for (let i = 0; i < stride; i++) {
        const x = rgb[row + i]!;
        const a = i >= 3 ? rgb[row + i - 3]! : 0;
        const b = y > 0 ? rgb[prev + i]! : 0;
        const c = y > 0 && i >= 3 ? rgb[prev + i - 3]! : 0;
        let value: number;
        if (filter === 0) value = x;
        else if (filter === 1) value = x - a;
        else if (filter === 2) value = x - b;
        else if (filter === 3) value = x - ((a + b) >> 1);
        else {
          const p = a + b - c;
          const pa = Math.abs(p - a);
          const pb = Math.abs(p - b);
          const pc = Math.abs(p - c);
          value = x - (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
        }
        const byte = value & 0xff;
        candidate[i] = byte;
        score += byte < 128 ? byte : 256 - byte;
      }
      if (score < bestScore) {
        bestScore = score;
        filtered[y * (stride + 1)] = filter;
        candidate.copy(filtered, y * (stride + 1) + 1);
      }
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour (RGB)
  header[10] = 0; // deflate
  header[11] = 0; // adaptive filtering
  header[12] = 0; // no interlace
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', header),
    chunk('tEXt', Buffer.from('Software\0Storefront local generator', 'latin1')),
    chunk('IDAT', deflateSync(filtered, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
