import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/**
 * Short secrets (4-digit OTPs, recovery codes) are hashed with a server-side key (a "pepper") so a copy of the
 * database alone cannot brute-force them; long random tokens use the plain SHA-256 of `hashToken`.
 */
export function derivePepper(serverSecret: string): Buffer {
  return createHmac('sha256', serverSecret).update('storefront/short-secret-pepper/v1').digest();
}

/** HMAC-SHA256 of `value` under the pepper, separated per purpose. */
export function keyedHash(pepper: Buffer, purpose: string, value: string): string {
  return createHmac('sha256', pepper).update(`${purpose}\u0000${value}`).digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

/** An opaque URL-safe token with 256 bits of randomness. */
export const randomToken = (): string => randomBytes(32).toString('base64url');

/** A string of `length` random decimal digits (leading zeros kept). */
export const randomDigits = (length: number): string => Array.from({ length }, () => String(randomInt(10))).join('');

// No 0/o, 1/l/i: codes are read off paper and typed by hand.
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A recovery code shaped `xxxx-xxxx`. */
export function randomRecoveryCode(): string {
  const chars = Array.from({ length: 8 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]);
  return `${chars.slice(0, 4).join('')}-${chars.slice(4).join('')}`;
}

/** The canonical form a recovery code is hashed in: lower case, no separators or spaces. */
export const canonicalRecoveryCode = (code: string): string => code.toLowerCase().replace(/[\s-]+/g, '');
