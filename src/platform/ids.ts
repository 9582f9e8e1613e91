import { randomFillSync } from 'node:crypto';

/**
 * UUIDv7 ids for the hot paths: the same ids as `uuid`'s v7 (time-ordered, monotonic within this process; ids.test.ts
 * compares them), with the random bytes taken from a pool filled 256 ids at a time instead of one `getRandomValues`
 * call per id, and the text written straight into a reused buffer: one string per id, where `uuid` allocates a byte
 * array and about twenty partial strings. A metered call makes seven ids; they were the largest single source of its
 * garbage (~9% of the bytes it allocated).
 */
const POOL_BYTES = 16 * 256;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let used = POOL_BYTES;
let msecs = -Infinity;
let seq = 0;

const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Where each of the 16 bytes' two hex digits go in the 36 characters (the dashes stay in place). */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const text = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1');

function put(index: number, byte: number): void {
  const at = AT[index]!;
  text[at] = HEX[byte >>> 4]!;
  text[at + 1] = HEX[byte & 0x0f]!;
}

/** The 16 bytes of a UUIDv7 (as `uuid`'s v7Bytes lays them out) as text; `random` holds 16 bytes from `from`. */
export function formatV7(random: Uint8Array, from: number, ms: number, sequence: number): string {
  put(0, (ms / 0x10000000000) & 0xff);
  put(1, (ms / 0x100000000) & 0xff);
  put(2, (ms / 0x1000000) & 0xff);
  put(3, (ms / 0x10000) & 0xff);
  put(4, (ms / 0x100) & 0xff);
  put(5, ms & 0xff);
  put(6, 0x70 | ((sequence >>> 28) & 0x0f));
  put(7, (sequence >>> 20) & 0xff);
  put(8, 0x80 | ((sequence >>> 14) & 0x3f));
  put(9, (sequence >>> 6) & 0xff);
  put(10, ((sequence << 2) & 0xff) | (random[from + 10]! & 0x03));
  for (let i = 11; i < 16; i++) put(i, random[from + i]!);
  return text.toString('latin1', 0, 36);
}

export function newId(): string {
  if (used === POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const from = used;
  used += 16;
  const now = Date.now();
  if (now > msecs) {
    msecs = now;
    seq = pool.readUInt32BE(from + 6) & 0x7fffffff;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) msecs++;
  }
  return formatV7(pool, from, msecs, seq);
}
