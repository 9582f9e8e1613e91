/** The gateway module's public entry: the text gateway's service and the media gateway built beside it. */
export { createGatewayService, type GatewayService } from './service.js';
export { createMediaGateway, type MediaGateway } from './media.js';
export { createDailyRequestLimit } from './plan-limits.js';
export type { CallOptions, TextAnswerBody, TextBody } from './service.js';
export { IdempotencyHeaders, MAX_MESSAGE_CHARS, MAX_MESSAGES, TEXT_BODY_LIMIT_BYTES } from './schemas.js';
// The request and answer schemas of /v1/ai/*, for surfaces that mirror them (the admin playground).
export { EnhanceBody as EnhanceBodySchema, EnhanceResponse, TextBody as TextBodySchema, TextResponse } from './schemas.js';
export { AudioBody, AudioResponse, EnhanceImageBody, ImageBody, ImageOrJobResponse, ImageResponse, VideoBody, VideoJobResponse } from './media.schemas.js';
export type { UpstreamAccounts, NewUpstreamAccount, UpstreamAccountPatch, ProviderHealth } from './accounts.js';
// The richer text request (parts, tools, response formats) that the SDK-compatible surfaces translate to and from.
export type { ChatMessage, ContentPart, ImagePart, ToolCall, ToolChoice, ToolDefinition, ResponseFormat } from './providers/types.js';
export { messageText } from './providers/types.js';
export type { ReasoningEffort, ReasoningOption, ThinkingBlock } from './providers/types.js';
export { isPackedThinking, packThinking, unpackThinking } from './thinking-envelope.js';
export { IGNORED_HEADER } from './text.js';
export { fromTextRoute } from './text-body.js';
export { imagePartFromBase64, imagePartFromUrl, MAX_IMAGES_PER_REQUEST, MAX_IMAGE_BYTES } from './image-input.js';
