import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { AppError, badRequest, notFound } from '../../platform/http/errors.js';
import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import { IGNORED_HEADER, type CallOptions, type GatewayService, type TextAnswerBody } from '../gateway/index.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import { streamTranslated, type TranslatedStreamOptions } from './held-stream.js';
import { keepImagesAsFiles, restoreKeptImages, type ImageFiles } from './responses.images.js';
import { inputItemId, pendingResponse, toResponse, toResponseCall, type ResponseCall } from './responses.format.js';
import { shownItem, shownResponse, wantsEncryptedReasoning } from './responses.reasoning.js';
import type { ResponseCreateRequest, ResponseObjectBody } from './responses.schemas.js';
import { createResponseStore, type ResponseOwner } from './responses.store.js';
import { responseEventStream } from './responses.stream.js';

export const RESPONSES_PURGE_JOB = 'compat.responses-purge';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'compat.responses-purge': Record<string, never>;
  }
}

export interface ResponsesServiceDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  gateway: Pick<GatewayService, 'text' | 'streamText'>;
  subscriptions: Pick<SubscriptionsService, 'activeFor'>;
  /** Where the images of stored responses are kept (responses.images.ts). */
  files: ImageFiles;
}

/** The gateway's field names as this surface names them (a 400 about `maxTokens` names `max_output_tokens`). */
const FIELDS: Record<string, string> = {
  maxTokens: 'max_output_tokens',
  toolChoice: 'tool_choice',
  responseFormat: 'text.format',
  topP: 'top_p',
  parallelToolCalls: 'parallel_tool_calls',
  messages: 'input',
};

/** A gateway refusal pointed at the request's own fields: `messages.3.content` becomes the item it came from. */
function inResponsesTerms(err: unknown, paths: string[]): unknown {
  if (!(err instanceof AppError) || !Array.isArray(err.details)) return err;
  const details = (err.details as { field?: unknown }[]).map((detail) => {
    if (typeof detail.field !== 'string') return detail;
    const message = /^messages\.(\d+)(.*)$/.exec(detail.field);
    const field = message ? `${paths[Number(message[1])] ?? 'input'}${message[2]}` : (FIELDS[detail.field] ?? detail.field);
    return { ...detail, field };
  });
  return new AppError(err.statusCode, err.code, err.message, details, err.headers);
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** What the request and the gateway left out, for the x-storefront-ignored header (undefined: nothing). */
function mergeIgnored(ours: string[], gateways: string[] | undefined): string[] | undefined {
  const all = [...new Set([...ours, ...(gateways ?? [])])];
  return all.length > 0 ? all : undefined;
}

/**
 * OpenAI's Responses API over the gateway's text call (metered, budgeted, allow-listed and idempotent exactly like
 * chat completions), with the responses kept for 30 days so they can be retrieved and continued.
 */
export function createResponsesService(deps: ResponsesServiceDeps) {
  const { db, clock, gateway, logger, files } = deps;
  const store = createResponseStore(deps);

  async function ownerOf(principal: Principal): Promise<ResponseOwner> {
    const workspaceId = (await deps.subscriptions.activeFor(principal.userId))?.subscription.workspaceId;
    return workspaceId ? { type: 'WORKSPACE', id: workspaceId } : { type: 'USER', id: principal.userId };
  }

  async function prepare(principal: Principal, body: ResponseCreateRequest): Promise<{ owner: ResponseOwner; call: ResponseCall }> {
    const owner = await ownerOf(principal);
    const previous = body.previous_response_id;
    const history = previous ? await restoreKeptImages(files, previous, await store.conversation(owner, previous)) : [];
    return { owner, call: toResponseCall(body, history) };
  }

  /**
   * The answer as a response, kept when `store` is on, its inline images as files of the caller (a replay answers the
   * response its first call kept). The kept response holds its reasoning's encrypted_content whatever `include` said,
   * so a continuation can send the thinking back; the caller sees it only when included.
   */
  async function finish(
    principal: Principal,
    owner: ResponseOwner,
    call: ResponseCall,
    answer: TextAnswerBody,
    createdAt: number,
  ): Promise<ResponseObjectBody> {
    return shownResponse(await kept(principal, owner, call, answer, createdAt), call.encryptedReasoning);
  }

  async function kept(principal: Principal, owner: ResponseOwner, call: ResponseCall, answer: TextAnswerBody, createdAt: number): Promise<ResponseObjectBody> {
    const response = toResponse(answer, call.echo, createdAt, seconds(clock.now()), call.names);
    if (!call.echo.store) return response;
    const earlier = await store.kept(response.id);
    if (earlier) return earlier;
    const withIds = call.inputItems.map((item, i) => ({ ...item, id: item.id ?? inputItemId(answer.requestId, item, i) }));
    const { items: inputItems, fileIds } = await keepImagesAsFiles(files, principal.userId, withIds);
    try {
      const saved = await store.save({
        owner,
        userId: principal.userId,
        requestId: answer.requestId,
        previousResponseId: call.echo.previous_response_id,
        inputItems,
        response,
      });
      if (!saved.inserted) await files.removeFiles(fileIds);
      return saved.response;
    } catch (err) {
      await files.removeFiles(fileIds).catch(() => undefined);
      throw err;
    }
  }

  async function stored(principal: Principal, id: string) {
    const found = await store.find(await ownerOf(principal), id);
    if (!found)
      throw notFound(
        `No response with id '${id}': it does not exist, belongs to someone else, was deleted, has expired (30 days) or was made with store: false.`,
      );
    return found;
  }

  return {
    async create(principal: Principal, body: ResponseCreateRequest, options: CallOptions) {
      const { owner, call } = await prepare(principal, body);
      const createdAt = seconds(clock.now());
      const { body: answer, replayed } = await gateway.text(principal, call.body, options).catch((err: unknown) => {
        throw inResponsesTerms(err, call.paths);
      });
      const ignored = mergeIgnored(call.ignored, answer.ignored);
      return { response: await finish(principal, owner, call, answer, createdAt), requestId: answer.requestId, replayed, ignored };
    },

    /** `stream: true`: `open` is called once the upstream accepted the call; errors before it are thrown. */
    async stream(principal: Principal, body: ResponseCreateRequest, options: TranslatedStreamOptions) {
      const { owner, call } = await prepare(principal, body);
      const createdAt = seconds(clock.now());
      const keep = async (answer: TextAnswerBody) => {
        try {
          return await finish(principal, owner, call, answer, createdAt);
        } catch (err) {
          logger.error({ err, requestId: answer.requestId }, 'storing a streamed response failed');
          throw err;
        }
      };
      // The request's own ignored fields join those the gateway names in the stream's headers.
      const open = (headers: Record<string, string> = {}) => {
        const ignored = mergeIgnored(call.ignored, headers[IGNORED_HEADER]?.split(', '));
        return options.open(ignored ? { ...headers, [IGNORED_HEADER]: ignored.join(', ') } : headers);
      };
      await streamTranslated(gateway, principal, call.body, { ...options, open }, (target, requestId) =>
        responseEventStream(target, pendingResponse(requestId, body.model, call.echo, createdAt), keep, {
          names: call.names,
          encryptedReasoning: call.encryptedReasoning,
        }),
      ).catch((err: unknown) => {
        throw inResponsesTerms(err, call.paths);
      });
    },

    async retrieve(principal: Principal, id: string, include?: readonly string[]): Promise<ResponseObjectBody> {
      return shownResponse((await stored(principal, id)).response, wantsEncryptedReasoning(include));
    },

    async remove(principal: Principal, id: string) {
      const removed = await store.remove(await ownerOf(principal), id);
      if (!removed) await stored(principal, id);
      else await files.removeFiles(removed.imageFileIds);
      return { id, object: 'response' as const, deleted: true as const };
    },

    /** The response's own input items (not those of earlier responses in its conversation), OpenAI's list page. */
    async inputItems(principal: Principal, id: string, query: { limit?: number; order?: 'asc' | 'desc'; after?: string; include?: string[] }) {
      const { inputItems } = await stored(principal, id);
      const ordered = query.order === 'asc' ? inputItems : [...inputItems].reverse();
      const after = query.after ? ordered.findIndex((item) => item.id === query.after) : -1;
      if (query.after && after < 0)
        throw badRequest(`after names '${query.after}', which is not an input item of ${id}.`, [
          { field: 'query.after', message: 'is not an item of this response' },
        ]);
      const from = after + 1;
      const limit = query.limit ?? 20;
      const data = ordered.slice(from, from + limit).map((item) => shownItem(item, wantsEncryptedReasoning(query.include)));
      return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: from + limit < ordered.length };
    },

    /** Account deletion: the user's own stored responses go, with their images (in the deletion's transaction). */
    async onAccountDeleted(tx: DbOrTx, userId: string): Promise<void> {
      await files.removeFiles(await store.removeOwnedBy(tx, userId), tx);
    },

    jobs(): JobDefinition[] {
      return [
        defineJob({
          name: RESPONSES_PURGE_JOB,
          options: { cron: '41 * * * *', retryLimit: 1 },
          handler: async () => {
            const { purged, images } = await db.transaction(async (tx) => {
              const expired = await store.purgeExpired(tx);
              return { purged: expired.purged, images: await files.removeFiles(expired.imageFileIds, tx) };
            });
            if (purged > 0) logger.info({ purged, images }, 'expired stored responses purged');
          },
        }) as JobDefinition,
      ];
    },
  };
}

export type ResponsesService = ReturnType<typeof createResponsesService>;
