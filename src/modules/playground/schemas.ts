import { Type } from 'typebox';
import { MODEL_TYPES } from '../catalog/service.js';
import { PLAYGROUND_RUN_KINDS, PLAYGROUND_RUN_STATUSES } from '../../db/schema/playground.js';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';
import { MAX_MESSAGE_CHARS, TextResponse } from '../gateway/index.js';
import { MAX_CONVERSATION_MESSAGES, UPLOAD_CONTENT_TYPES } from './service.js';

/** Base64 of a source image within the 1 MB request body limit. */
const MAX_UPLOAD_BASE64_CHARS = 1_000_000;

export const ModelsQuery = StrictObject({
  type: Type.Optional(Type.Enum([...MODEL_TYPES], { description: 'Only models of this type' })),
});

export const PlaygroundModel = Type.Object({
  slug: Type.String(),
  displayName: Type.String(),
  type: Type.Enum([...MODEL_TYPES]),
  status: Type.String({ description: 'ACTIVE or BETA (DISABLED models are not servable and not listed)' }),
  availability: Type.String({ description: 'AVAILABLE or RETIRING' }),
  features: Type.Array(Type.String()),
  provider: Type.Object({ slug: Type.String(), status: Type.String({ description: 'ACTIVE or DEGRADED (INACTIVE and DISABLED providers are not listed)' }) }),
  allowListed: Type.Boolean({ description: 'Already on the internal playground plan; a model joins it on its first run' }),
});

export const ModelsResponse = Type.Object({ items: Type.Array(PlaygroundModel) });

export const JobIdParams = StrictObject({
  jobId: Type.String({ minLength: 1, maxLength: 64, description: 'The jobId a playground video (or async image) run answered' }),
});

export const UploadBody = StrictObject({
  contentType: Type.Enum([...UPLOAD_CONTENT_TYPES]),
  data: Type.String({
    minLength: 1,
    maxLength: MAX_UPLOAD_BASE64_CHARS,
    pattern: '^[A-Za-z0-9+/]+={0,2}$',
    description: 'The image bytes, base64 (about 730 KB of image at most)',
  }),
  filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
});

export const UploadResponse = Type.Object({
  fileId: Type.String(),
  url: Type.String({ description: 'A /v1/files/raw/<key> URL for initImageUrl (image), imageUrl (enhance-image) or seedImageUrl (video)' }),
  contentType: Type.String(),
  size: Type.Integer(),
});

export const HistoryQuery = StrictObject({
  ...pageQuery(50, 100),
  adminId: Type.Optional(Type.String({ format: 'uuid', description: 'Only the runs of this operator' })),
  kind: Type.Optional(Type.Enum([...PLAYGROUND_RUN_KINDS])),
});

export const PlaygroundRun = Type.Object({
  id: Type.String(),
  adminId: Type.String({ description: 'The operator who ran it' }),
  kind: Type.Enum([...PLAYGROUND_RUN_KINDS]),
  model: Type.String(),
  status: Type.Enum([...PLAYGROUND_RUN_STATUSES], { description: 'QUEUED: a job was started; it takes the job outcome when polled to its end' }),
  prompt: Type.String({ description: 'The prompt or last user message, cut to 500 characters' }),
  requestId: Nullable(Type.String({ description: "The gateway request id: the internal identity's usage record and generation carry it" })),
  jobId: Nullable(Type.String()),
  conversationId: Nullable(Type.String()),
  tokensCharged: Nullable(Type.Integer({ description: 'Tokens the run was charged (to the internal identity)' })),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  createdAt: DateTime,
});

export const HistoryPage = Page(PlaygroundRun);

export const AnalyticsQuery = StrictObject({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30, description: 'How many UTC days back, today included (default 30)' })),
});

export const AnalyticsResponse = Type.Object({
  from: Type.String({ format: 'date' }),
  to: Type.String({ format: 'date' }),
  totalRuns: Type.Integer(),
  days: Type.Array(
    Type.Object({
      date: Type.String({ format: 'date', description: 'A UTC day' }),
      runs: Type.Integer({ description: 'Playground runs started that day, failed ones included' }),
      failed: Type.Integer(),
      tokensCharged: Type.Integer(),
    }),
    { description: 'Every day of the window, oldest first' },
  ),
});

const Message = StrictObject({
  role: Type.Enum(['system', 'user', 'assistant']),
  content: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS }),
});

export const ConversationCreate = StrictObject({
  model: Type.String({ minLength: 1, maxLength: 200, description: 'The TEXT or MULTIMODAL model the turns run on' }),
  title: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'Default: the start of the first user message' })),
  messages: Type.Optional(
    Type.Array(Message, {
      maxItems: MAX_CONVERSATION_MESSAGES,
      description: 'Turns to save as they are (e.g. a system prompt, or an exchange run through /text)',
    }),
  ),
});

export const ConversationTurn = StrictObject({
  content: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS, pattern: '\\S', description: 'The next user message' }),
  maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
});

export const Conversation = Type.Object({
  id: Type.String(),
  adminId: Type.String(),
  title: Type.String(),
  model: Type.String(),
  messages: Type.Array(Type.Object({ role: Type.String(), content: Type.String() })),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const ConversationsQuery = StrictObject({ ...pageQuery(20, 100) });
export const ConversationsPage = Page(Conversation);

export const ConversationTurnResponse = Type.Object({ conversation: Conversation, reply: TextResponse });
