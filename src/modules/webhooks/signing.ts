import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 32 random bytes (base64url). */
export const newSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;

/** How listings show a secret: the prefix, bullets and its last 4 characters. */
export const maskSecret = (secret: string): string => `${SECRET_PREFIX}${'•'.repeat(8)}${secret.slice(-4)}`;

/** The lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the webhook secret (spec A "Signature"). */
export const signatureOf = (secret: string, timestamp: number, body: string): string =>
  createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

/** The headers of one delivery attempt, signed with its own timestamp (unix seconds). */
export function deliveryHeaders(input: { secret: string; event: string; deliveryId: string; timestamp: number; body: string }): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Storefront-Webhooks/1.0',
    'x-service-event': input.event,
    'x-service-delivery': input.deliveryId,
    'x-service-timestamp': String(input.timestamp),
    'x-service-signature': `t=${input.timestamp},v1=${signatureOf(input.secret, input.timestamp, input.body)}`,
  };
}
