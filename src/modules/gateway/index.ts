/** The gateway module's public entry: the text gateway's service and the media gateway built beside it. */
export { createGatewayService, type GatewayService } from './service.js';
export { createMediaGateway, type MediaGateway } from './media/media.js';
export { createDailyRequestLimit } from './metering/access.js';
// The JSON answer of a text call (`TextAnswerBody`), built once by its settlement.
export type { CallOptions, TextAnswer as TextAnswerBody, TextBody } from './text/types.js';
export { IdempotencyHeaders, MAX_MESSAGE_CHARS, MAX_MESSAGES, TEXT_BODY_LIMIT_BYTES } from './surfaces/text.schemas.js';
// The request and answer schemas of /v1/ai/*, for surfaces that mirror them (the admin playground).
export { EnhanceBody as EnhanceBodySchema, EnhanceResponse, TextBody as TextBodySchema, TextResponse } from './surfaces/text.schemas.js';
export {
  AudioBody,
  AudioResponse,
  EnhanceImageBody,
  ImageBody,
  ImageOrJobResponse,
  ImageResponse,
  VideoBody,
  VideoJobResponse,
} from './surfaces/media.schemas.js';
export type { UpstreamAccounts, NewUpstreamAccount, UpstreamAccountPatch, ProviderHealth } from './routing/accounts.js';
// The richer text request (parts, tools, response formats) that the SDK-compatible surfaces translate to and from.
export type { ChatMessage, ContentPart, ImagePart, ToolCall, ToolChoice, ToolDefinition, ResponseFormat } from './providers/types.js';
export { messageText } from './providers/types.js';
export type { ReasoningEffort, ReasoningOption, ThinkingBlock } from './providers/types.js';
export { isPackedThinking, packThinking, unpackThinking } from './text/thinking-envelope.js';
export { IGNORED_HEADER } from './text/text.js';
export { fromTextRoute } from './surfaces/text-body.js';
export { imagePartFromBase64, imagePartFromUrl, MAX_IMAGES_PER_REQUEST, MAX_IMAGE_BYTES } from './text/image-input.js';
