/** A PayPal-style wallet. Imports nothing: src/config.ts reads it (through ../settings.ts). */
export const settings = { slug: 'wallet_global', variables: ['CLIENT_ID', 'CLIENT_SECRET', 'WEBHOOK_ID'], baseUrl: 'https://api-m.paypal.com' } as const;
