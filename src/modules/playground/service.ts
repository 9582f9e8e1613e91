import type { Static } from 'typebox';
import { newId } from '../../platform/ids.js';
import type { ModelType } from '../../db/schema/catalog.js';
import type { PlaygroundRunKind } from '../../db/schema/playground.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { SseStream } from '../../platform/http/sse.js';
import { badRequest } from '../../platform/http/errors.js';
import { sniffFormat } from '../../platform/media/sniff.js';
import type { AuthService } from '../auth/index.js';
import type { CatalogService } from '../catalog/service.js';
import type { FilesService } from '../files/service.js';
import type { AudioBody, EnhanceImageBody, GatewayService, ImageBody, MediaGateway, TextAnswerBody, TextBody, VideoBody } from '../gateway/index.js';
import { messageText } from '../gateway/index.js';
import type { JobsService } from '../jobs/service.js';
import type { LibraryService } from '../library/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { WalletService } from '../wallet/service.js';
import { createPlaygroundConversations, type ConversationView, type PlaygroundConversations } from './conversations.js';
import { createPlaygroundIdentity, type WarningLog } from './identity.js';
import { createPlaygroundRuns, type HistoryQuery, type RunOutcome } from './runs.js';

export { MAX_CONVERSATION_MESSAGES } from './conversations.js';

export interface PlaygroundServiceDeps {
  db: Db;
  clock: Clock;
  auth: Pick<AuthService, 'ensureInternalAccount'>;
  plans: Pick<PlansService, 'playgroundPlan' | 'allowModel' | 'isModelAllowed'>;
  subscriptions: Pick<SubscriptionsService, 'activeFor' | 'ensureInternal'>;
  wallet: Pick<WalletService, 'ensure' | 'credit'>;
  catalog: Pick<CatalogService, 'getBySlug' | 'list'>;
  gateway: Pick<GatewayService, 'text' | 'streamText' | 'enhancePrompt'>;
  media: {
    image: Pick<MediaGateway['image'], 'generateSync' | 'submit'>;
    audio: Pick<MediaGateway['audio'], 'generate'>;
    video: Pick<MediaGateway['video'], 'submit'>;
    enhance: Pick<MediaGateway['enhance'], 'enhance'>;
  };
  jobs: Pick<JobsService, 'getOwn'>;
  files: Pick<FilesService, 'saveBytes'>;
  library: { generations: Pick<LibraryService['generations'], 'list'> };
}

/** Source images the playground takes for image-to-image (the formats image models read). */
export const UPLOAD_CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/webp'] as const;
const UPLOAD_FORMATS: Record<(typeof UPLOAD_CONTENT_TYPES)[number], string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp' };

const lastUserMessage = (body: TextBody) => {
  const last = [...body.messages].reverse().find((m) => m.role === 'user');
  return last ? messageText(last) : '';
};
const needsUserMessage = (body: TextBody) => {
  if (!body.messages.some((m) => m.role === 'user')) {
    throw badRequest('messages must include at least one user message.', [{ field: 'messages', message: 'must include a user message' }]);
  }
};
const charged = (requestId: string, tokens: number): RunOutcome => ({ status: 'SUCCEEDED', requestId, tokensCharged: tokens });
const queued = (jobId: string, tokens: number | null): RunOutcome => ({ status: 'QUEUED', requestId: jobId, jobId, tokensCharged: tokens });

/**
 * The admin playground (spec B): every run goes through the real gateway and its metering pipeline (routing,
 * failover, reservation, usage record, library item) as the internal playground identity, never as the operator;
 * which operator ran it is recorded in `playground_runs`, which also feeds the history and the per-day analytics.
 */
export function createPlaygroundService(deps: PlaygroundServiceDeps) {
  const { gateway, media } = deps;
  const identity = createPlaygroundIdentity({ ...deps, newId });
  const runs = createPlaygroundRuns(deps);
  const conversations = createPlaygroundConversations(deps);

  /** Prepares the identity for the model, runs the call as it (never blocked by its wallet) and records the run. */
  async function run<T>(
    adminId: string,
    kind: PlaygroundRunKind,
    model: string,
    prompt: string,
    call: (principal: Awaited<ReturnType<typeof identity.prepare>>) => Promise<T>,
    describe: (answer: T) => RunOutcome,
    conversationId: string | null = null,
  ) {
    return runs.track(
      { adminId, kind, modelSlug: model, prompt, conversationId },
      async () => {
        const principal = await identity.prepare(model);
        return identity.unblocked(principal, () => call(principal));
      },
      describe,
    );
  }

  return {
    /** At start: the internal identity exists, and an ordinary account holding its address is reported (see identity.ts). */
    seed: (log: WarningLog) => identity.ensure(log),

    /** The internal identity's user id (found by its kind). */
    identityId: identity.identityId,

    /** Servable models (not DISABLED, provider neither INACTIVE nor DISABLED), and whether each is on the plan's allow-list yet. */
    async models(filter: { type?: ModelType }) {
      const plan = await deps.plans.playgroundPlan();
      const entries = await deps.catalog.list(filter);
      return {
        items: await Promise.all(
          entries.map(async (entry) => ({
            slug: entry.row.slug,
            displayName: entry.row.displayName,
            type: entry.row.type,
            status: entry.row.status,
            availability: entry.row.availability,
            features: entry.row.features,
            provider: { slug: entry.provider.slug, status: entry.provider.status },
            allowListed: plan ? await deps.plans.isModelAllowed(plan.id, entry.row.id) : false,
          })),
        ),
      };
    },

    async text(adminId: string, body: TextBody) {
      needsUserMessage(body);
      return run(
        adminId,
        'TEXT',
        body.model,
        lastUserMessage(body),
        (p) => gateway.text(p, { ...body, stream: false }).then((r) => r.body),
        (a) => charged(a.requestId, a.usage.creditsConsumed),
      );
    },

    /** Streams the answer through `open` (SSE, like POST /v1/ai/text with stream: true); a stream broken midway is a FAILED run. */
    async streamText(adminId: string, body: TextBody, open: (headers?: Record<string, string>) => SseStream) {
      needsUserMessage(body);
      return run(
        adminId,
        'TEXT_STREAM',
        body.model,
        lastUserMessage(body),
        (p) => gateway.streamText(p, { ...body, stream: true }, { open }),
        (answer: TextAnswerBody | null): RunOutcome =>
          answer ? charged(answer.requestId, answer.usage.creditsConsumed) : { status: 'FAILED', tokensCharged: null },
      );
    },

    async image(adminId: string, body: Static<typeof ImageBody>) {
      type Answer = Awaited<ReturnType<MediaGateway['image']['generateSync']>> | Awaited<ReturnType<MediaGateway['image']['submit']>>;
      return run<Answer>(
        adminId,
        'IMAGE',
        body.model,
        body.prompt,
        (p) => (body.async ? media.image.submit(p, body) : media.image.generateSync(p, body)),
        (a) => ('jobId' in a ? queued(a.jobId, null) : charged(a.requestId, a.usage.creditsConsumed)),
      );
    },

    async audio(adminId: string, body: Static<typeof AudioBody>) {
      return run(
        adminId,
        'AUDIO',
        body.model,
        body.text ?? body.description ?? '',
        (p) => media.audio.generate(p, body),
        (a) => charged(a.requestId, a.usage.creditsConsumed),
      );
    },

    async video(adminId: string, body: Static<typeof VideoBody>) {
      return run(
        adminId,
        'VIDEO',
        body.model,
        body.prompt,
        (p) => media.video.submit(p, body),
        (a) => queued(a.jobId, a.creditsReserved),
      );
    },

    /** A playground job (video, or an image with `async`); its run takes the outcome once it ended. */
    async job(jobId: string) {
      const view = await deps.jobs.getOwn(await identity.identityId(), jobId);
      if (view.status === 'SUCCEEDED' || view.status === 'FAILED' || view.status === 'CANCELED') {
        await runs.jobEnded(view.jobId, {
          status: view.status === 'SUCCEEDED' ? 'SUCCEEDED' : 'FAILED',
          tokensCharged: view.creditsConsumed,
          errorCode: view.errorCode,
          errorMessage: view.errorMessage,
        });
      }
      return view;
    },

    /** Stores a source image (base64) as the identity's INIT_IMAGE file, for image-to-image and image enhancement. */
    async upload(input: { contentType: (typeof UPLOAD_CONTENT_TYPES)[number]; data: string; filename?: string }) {
      const bytes = Buffer.from(input.data, 'base64');
      const format = bytes.length > 0 ? sniffFormat(bytes) : null;
      if (format !== UPLOAD_FORMATS[input.contentType]) {
        throw badRequest(
          `The data is not a ${input.contentType} image. Send the file's bytes base64-encoded, with the content type that matches them (PNG, JPEG or WebP).`,
          [{ field: 'data', message: `must be a base64-encoded ${input.contentType} image` }],
        );
      }
      const saved = await deps.files.saveBytes({
        ownerId: await identity.identityId(),
        kind: 'INIT_IMAGE',
        contentType: input.contentType,
        body: bytes,
        filename: input.filename ?? null,
      });
      return { fileId: saved.id, url: saved.url, contentType: saved.contentType, size: saved.size };
    },

    async enhancePrompt(adminId: string, body: Parameters<GatewayService['enhancePrompt']>[1]) {
      return run(
        adminId,
        'ENHANCE_PROMPT',
        body.model,
        body.prompt,
        (p) => gateway.enhancePrompt(p, body).then((r) => r.body),
        () => ({ status: 'SUCCEEDED' }),
      );
    },

    async enhanceImage(adminId: string, body: Static<typeof EnhanceImageBody>) {
      return run(
        adminId,
        'ENHANCE_IMAGE',
        body.model,
        body.instruction ?? '',
        (p) => media.enhance.enhance(p, body),
        (a) => charged(a.requestId, a.usage.creditsConsumed),
      );
    },

    history: (query: HistoryQuery) => runs.history(query),
    analytics: (days: number) => runs.perDay(days),

    /** The identity's library: every generation a playground run saved. */
    async generations(query: Parameters<LibraryService['generations']['list']>[1]) {
      return deps.library.generations.list(await identity.identityId(), query);
    },

    conversations: {
      create: (...args: Parameters<PlaygroundConversations['create']>) => conversations.create(...args),
      get: (...args: Parameters<PlaygroundConversations['get']>) => conversations.get(...args),
      list: (...args: Parameters<PlaygroundConversations['list']>) => conversations.list(...args),
      remove: (...args: Parameters<PlaygroundConversations['remove']>) => conversations.remove(...args),

      /** Sends a user message with the saved ones through the gateway and saves both it and the reply. */
      async turn(
        adminId: string,
        id: string,
        input: { content: string; maxTokens?: number; temperature?: number },
      ): Promise<{ conversation: ConversationView; reply: TextAnswerBody }> {
        const row = await conversations.own(adminId, id);
        const messages = conversations.nextMessages(row, input.content);
        const body: TextBody = { model: row.modelSlug, messages, maxTokens: input.maxTokens, temperature: input.temperature };
        const { answer } = await run(
          adminId,
          'CONVERSATION_TURN',
          row.modelSlug,
          input.content,
          (p) => gateway.text(p, body).then((r) => r.body),
          (a) => charged(a.requestId, a.usage.creditsConsumed),
          row.id,
        );
        const conversation = await conversations.saveTurn(row, [...messages, { role: 'assistant', content: answer.text }]);
        return { conversation, reply: answer };
      },
    },
  };
}

export type PlaygroundService = ReturnType<typeof createPlaygroundService>;
