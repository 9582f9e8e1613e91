import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Secrets the service must use again later (an operator's upstream API key), sealed with AES-256-GCM under a key
 * from the environment (SECRETS_ENCRYPTION_KEY). The stored form is `v1.<keyId>.<iv>.<tag>.<ciphertext>`
 * (base64url): `keyId` names the key that sealed it, so opening with another key fails with a message saying so
 * rather than with an opaque authentication error. `context` (e.g. the account id) is bound as associated data:
 * a sealed value copied onto another row does not open.
 */
export interface SecretBox {
  /** The id of the configured key (8 hex digits of a hash; reveals nothing about the key). */
  readonly keyId: string;
  seal(plaintext: string, context: string): string;
  /** Throws `SealedSecretError` for a value sealed with another key, tampered with, or bound to another context. */
  open(sealed: string, context: string): string;
}

export class SealedSecretError extends Error {
  constructor(
    message: string,
    readonly reason: 'FORMAT' | 'OTHER_KEY' | 'TAMPERED',
  ) {
    super(message);
    this.name = 'SealedSecretError';
  }
}

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Derives the 256-bit AES key from the configured secret (any string of 32+ characters). */
export function createSecretBox(secret: string): SecretBox {
  if (secret.length < 32) throw new Error('The secrets encryption key must be at least 32 characters.');
  const key = Buffer.from(hkdfSync('sha256', secret, 'storefront', 'storefront/sealed-secrets/v1', 32));
  const keyId = createHash('sha256').update(key).update('key-id').digest('hex').slice(0, 8);
  return {
    keyId,
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, keyId, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
    },
    open(sealed, context) {
      const parts = sealed.split('.');
      if (parts.length !== 5 || parts[0] !== VERSION) throw new SealedSecretError('The stored secret is not in a format this version can read.', 'FORMAT');
      const [, sealedKeyId, iv, tag, ciphertext] = parts as [string, string, string, string, string];
      if (sealedKeyId !== keyId) {
        throw new SealedSecretError(
          `The stored secret was encrypted with another key (key id ${sealedKeyId}; the configured SECRETS_ENCRYPTION_KEY has id ${keyId}). Restore the key it was stored with, or enter the credential again.`,
          'OTHER_KEY',
        );
      }
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SealedSecretError('The stored secret failed its integrity check (altered, or stored for another record).', 'TAMPERED');
      }
    },
  };
}
