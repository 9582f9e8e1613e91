import { hash, verify } from '@node-rs/argon2';

// OWASP's first recommendation for argon2id: 19 MiB, 2 iterations, 1 lane.
const ARGON2ID = 2; // Algorithm.Argon2id, a const enum that isolated modules cannot import
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;

export const hashPassword = (password: string): Promise<string> => hash(password, OPTIONS);

let dummyHash: Promise<string> | undefined;

/** Verifies a password; with no stored hash it still does the work, so timing does not reveal unknown emails. */
export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (!storedHash) {
    dummyHash ??= hashPassword('not-a-real-password');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  return verify(storedHash, password).catch(() => false);
}
