import { randomInt } from 'node:crypto';

// No 0/o, 1/l/i: codes are read off paper and typed by hand.
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A recovery code shaped `xxxx-xxxx`. */
export function randomRecoveryCode(): string {
  const chars = Array.from({ length: 8 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]);
  return `${chars.slice(0, 4).join('')}-${chars.slice(4).join('')}`;
}

/** The canonical form a recovery code is hashed in: lower case, no separators or spaces. */
export const canonicalRecoveryCode = (code: string): string => code.toLowerCase().replace(/[\s-]+/g, '');
