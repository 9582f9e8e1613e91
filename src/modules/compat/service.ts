import type { Principal } from '../../platform/auth/plugin.js';
import { startOfUtcDay, startOfUtcMonth, type Clock } from '../../platform/clock/clock.js';
import { badRequest, forbidden, notFound } from '../../platform/http/errors.js';
import type { ApiKeysService } from '../apikeys/service.js';
import type { CatalogService, ModelEntry } from '../catalog/service.js';
import type { CallOptions, GatewayService } from '../gateway/index.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { WalletService } from '../wallet/service.js';
import { completionId, toChatCompletion, toTextBody, type ChatCompletionRequest } from './openai.format.js';
import { messageId, toCountedBody, toMessage, toTextBody as toAnthropicTextBody, type CountTokensRequest, type MessagesRequest } from './anthropic.format.js';
import { anthropicEventStream } from './anthropic.stream.js';
import { streamTranslated, type TranslatedStreamOptions } from './held-stream.js';
import { openAiChunkStream } from './openai.stream.js';
import { createCompatMedia, type CompatMediaDeps } from './media.js';
import { includesThoughts, toGenerateContentResponse, toTextBody as toGeminiTextBody, type GenerateContentRequest } from './gemini.format.js';
import { countRequestTokens, toGeminiModel } from './gemini.models.js';
import { geminiChunkStream } from './gemini.stream.js';

export interface CompatServiceDeps extends Omit<CompatMediaDeps, 'now' | 'gateway'> {
  clock: Clock;
  gateway: Pick<GatewayService, 'text' | 'streamText' | 'once'>;
  catalog: Pick<CatalogService, 'list'>;
  plans: Pick<PlansService, 'access'>;
  subscriptions: Pick<SubscriptionsService, 'activeFor'>;
  apiKeys: Pick<ApiKeysService, 'describe'>;
  wallet: Pick<WalletService, 'balance' | 'usageSince'>;
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const toOpenAiModel = (entry: ModelEntry) => ({
  id: entry.row.slug,
  object: 'model' as const,
  created: seconds(entry.row.createdAt),
  owned_by: entry.provider.slug,
});

/**
 * The OpenAI-compatible surface: OpenAI's shapes over the gateway's own text service, so a call is metered exactly like
 * `POST /v1/ai/text` (same reservation, settlement, usage record, history and Idempotency-Key).
 */
export function createCompatService(deps: CompatServiceDeps) {
  const { clock, gateway } = deps;

  /** The models the caller's plan allows that can be served now. */
  async function allowedModels(principal: Principal): Promise<ModelEntry[]> {
    const [active, access, listed] = await Promise.all([deps.subscriptions.activeFor(principal.userId), deps.plans.access(), deps.catalog.list()]);
    if (!active) return [];
    const keyAllows = principal.keyControls?.allowedModels;
    return listed.filter((e) => access.allowed(active.plan.id, e.row.id) && (!keyAllows || keyAllows.includes(e.row.slug)));
  }

  async function geminiModel(principal: Principal, id: string) {
    const entry = (await allowedModels(principal)).find((e) => e.row.slug === id);
    if (!entry) throw notFound(`The model "models/${id}" does not exist or your plan does not include it. List yours with GET /gemini/v1beta/models.`);
    return toGeminiModel(entry);
  }

  return {
    /** Images and speech through the media gateway. */
    ...createCompatMedia({ gateway, media: deps.media, files: deps.files, now: () => clock.now() }),

    async chatCompletion(principal: Principal, body: ChatCompletionRequest, options: CallOptions) {
      const { body: answer, replayed } = await gateway.text(principal, toTextBody(body), options);
      return { completion: toChatCompletion(answer, seconds(clock.now())), requestId: answer.requestId, replayed, ignored: answer.ignored };
    },

    /** `stream: true`: `open` is called once the upstream accepted the call; errors before it are thrown. */
    async streamChatCompletion(principal: Principal, body: ChatCompletionRequest, options: TranslatedStreamOptions) {
      const includeUsage = body.stream_options?.include_usage === true;
      await streamTranslated(gateway, principal, toTextBody(body), options, (target, requestId) =>
        openAiChunkStream(target, { id: completionId(requestId), created: seconds(clock.now()), model: body.model }, includeUsage),
      );
    },

    /** Anthropic's `POST /v1/messages`. */
    async message(principal: Principal, body: MessagesRequest, options: CallOptions) {
      const { body: answer, replayed } = await gateway.text(principal, toAnthropicTextBody(body), options);
      return { message: toMessage(answer), requestId: answer.requestId, replayed, ignored: answer.ignored };
    },

    async streamMessage(principal: Principal, body: MessagesRequest, options: TranslatedStreamOptions) {
      await streamTranslated(gateway, principal, toAnthropicTextBody(body), options, (target, requestId) =>
        anthropicEventStream(target, { id: messageId(requestId), model: body.model }),
      );
    },

    /**
     * Anthropic's `POST /v1/messages/count_tokens`: counted here as Gemini's countTokens is (no upstream call, nothing
     * charged), for a model the caller's plan and key allow.
     */
    async countAnthropicTokens(principal: Principal, body: CountTokensRequest) {
      const counted = toCountedBody(body);
      if (!(await allowedModels(principal)).some((e) => e.row.slug === body.model)) {
        const keyAllows = principal.keyControls?.allowedModels;
        if (keyAllows && !keyAllows.includes(body.model)) {
          throw forbidden(`This API key may call only ${keyAllows.map((slug) => `"${slug}"`).join(', ')}, not "${body.model}".`, {
            model: body.model,
            allowedModels: keyAllows,
          });
        }
        throw notFound(`The model "${body.model}" does not exist or your plan does not include it. List yours with GET /openai/v1/models.`);
      }
      return { input_tokens: countRequestTokens(counted) };
    },

    /** Gemini's `models/{model}:generateContent`. */
    async generateContent(principal: Principal, model: string, body: GenerateContentRequest, options: CallOptions) {
      const { body: answer, replayed } = await gateway.text(principal, toGeminiTextBody(model, body), options);
      // What the gateway itself left out of the upstream call (when it reports any), for the x-storefront-ignored header.
      const gatewayIgnored = (answer as { ignored?: string[] }).ignored ?? [];
      return {
        response: toGenerateContentResponse(answer, { includeThoughts: includesThoughts(body) }),
        requestId: answer.requestId,
        replayed,
        gatewayIgnored,
      };
    },

    async streamGenerateContent(principal: Principal, model: string, body: GenerateContentRequest, options: TranslatedStreamOptions) {
      await streamTranslated(gateway, principal, toGeminiTextBody(model, body), options, (target, requestId) =>
        geminiChunkStream(target, { responseId: requestId, model, includeThoughts: includesThoughts(body) }),
      );
    },

    /** Gemini's countTokens: counted here (no upstream call, nothing charged), for a model the caller may use. */
    async countGeminiTokens(principal: Principal, model: string, body: GenerateContentRequest) {
      await geminiModel(principal, model);
      return { totalTokens: countRequestTokens(toGeminiTextBody(model, body)) };
    },

    async geminiModels(principal: Principal) {
      return { models: (await allowedModels(principal)).map(toGeminiModel) };
    },

    geminiModel,

    async listModels(principal: Principal) {
      return { object: 'list' as const, data: (await allowedModels(principal)).map(toOpenAiModel) };
    },

    async getModel(principal: Principal, id: string) {
      const entry = (await allowedModels(principal)).find((e) => e.row.slug === id);
      if (!entry) throw notFound(`The model "${id}" does not exist or your plan does not include it. List yours with GET /openai/v1/models.`);
      return toOpenAiModel(entry);
    },

    /** What a script holding only an API key can learn about it: the key, the wallet it spends from, its spend. */
    async keyInfo(principal: Principal) {
      if (!principal.apiKeyId) throw badRequest('GET /openai/v1/key describes the API key that calls it: call it with an API key, not an access token.');
      const key = await deps.apiKeys.describe(principal.userId, principal.apiKeyId);
      const active = await deps.subscriptions.activeFor(principal.userId);
      const workspaceId = active?.subscription.workspaceId;
      const owner = workspaceId ? { workspaceId } : { userId: principal.userId };
      const now = clock.now();
      const [balance, spend] = await Promise.all([
        deps.wallet.balance(owner),
        deps.wallet.usageSince(owner, { today: startOfUtcDay(now), month: startOfUtcMonth(now) }),
      ]);
      return {
        label: key.label,
        scopes: key.scopes,
        expiresAt: key.expiresAt,
        createdAt: key.createdAt,
        balance: { tokens: balance.tokens, credits: balance.credits },
        spend: {
          today: { tokens: spend.today.tokensSpent, requests: spend.today.requests },
          month: { tokens: spend.month.tokensSpent, requests: spend.month.requests },
        },
      };
    },
  };
}

export type CompatService = ReturnType<typeof createCompatService>;
