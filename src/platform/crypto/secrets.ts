import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/**
 * Short secrets (4-digit OTPs, recovery codes) are hashed with a server-side key (a "pepper") so a copy of the
 * database alone cannot brute-force them; long random tokens use the plain SHA-256 of `hashToken`.
 */
export function derivePepper(serverSecret: string): Buffer {
  return createHmac('sha256', serverSecret).update('storefront/short-secret-pepper/v1').digest();
}

/** SHA-256 (hex) of a long random token: refresh tokens, reset tokens and link tokens are stored this way. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

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
