/** A Stripe-style card gateway. Imports nothing: src/config.ts reads it (through ../settings.ts). */
export const settings = { slug: 'card_global', variables: ['SECRET_KEY', 'WEBHOOK_SECRET'], baseUrl: 'https://api.stripe.com' } as const;
