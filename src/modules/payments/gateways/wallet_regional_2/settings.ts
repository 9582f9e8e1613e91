/** A Nagad-style mobile wallet (RSA-signed messages). Imports nothing: src/config.ts reads it (through ../settings.ts). */
export const settings = {
  slug: 'wallet_regional_2',
  variables: ['MERCHANT_ID', 'MERCHANT_PRIVATE_KEY', 'GATEWAY_PUBLIC_KEY'],
  baseUrl: 'https://api.mynagad.com',
} as const;
