/** The gateway module's public entry: the text gateway's service and the media gateway built beside it. */
export { createGatewayService, type GatewayService } from './service.js';
export { createMediaGateway, type MediaGateway } from './media.js';
export type { TextAnswerBody, TextBody } from './service.js';
export { IdempotencyHeaders, MAX_MESSAGE_CHARS, MAX_MESSAGES } from './schemas.js';
export type { UpstreamAccounts, NewUpstreamAccount, UpstreamAccountPatch, ProviderHealth } from './accounts.js';
