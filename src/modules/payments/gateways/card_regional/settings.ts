/** An SSLCommerz-style regional card and banking gateway. Imports nothing: src/config.ts reads it (through ../settings.ts). */
export const settings = { slug: 'card_regional', variables: ['STORE_ID', 'STORE_PASSWORD'], baseUrl: 'https://securepay.sslcommerz.com' } as const;
