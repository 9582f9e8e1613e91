/** A bKash-style mobile wallet (tokenized checkout). Imports nothing: src/config.ts reads it (through ../settings.ts). */
export const settings = {
  slug: 'wallet_regional_1',
  variables: ['APP_KEY', 'APP_SECRET', 'USERNAME', 'PASSWORD'],
  baseUrl: 'https://tokenized.pay.bka.sh/v1.2.0-beta',
} as const;
