/**
 * Direct carrier billing through an aggregator, which has no public address: DCB_BASE_URL is required to run live.
 * Imports nothing: src/config.ts reads it (through ../settings.ts).
 */
export const settings = { slug: 'dcb', variables: ['API_KEY'], baseUrl: null } as const;
