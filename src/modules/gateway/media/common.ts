import type { FastifyBaseLogger } from 'fastify';
import type { ServerTiming } from '../../../platform/http/server-timing.js';
import type { KeyScope, MeteredRequest } from '../metering/idempotency.js';
import type { FileKind } from '../../../db/schema/files.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { Db, Tx } from '../../../platform/db/database.js';
import { emitDomainEvent } from '../../../platform/events/outbox.js';
import { AppError, badRequest } from '../../../platform/http/errors.js';
import type { Jobs } from '../../../platform/jobs/jobs.js';
import type { SafeFetcher } from '../../../platform/net/safe-fetch.js';
import type { CatalogService, GatewayModel } from '../../catalog/service.js';
import type { FilesService } from '../../files/service.js';
import type { JobRow, JobsService } from '../../jobs/service.js';
import type { LibraryService } from '../../library/service.js';
import type { NotificationsService } from '../../notifications/service.js';
import type { UsageService } from '../../usage/service.js';
import type { WalletService } from '../../wallet/service.js';
import type { AccessDeps } from '../metering/access.js';
import { upstreamToAppError } from '../routing/upstream-errors.js';
import type { IdempotencyStore } from '../metering/idempotency.js';
import type { Metering } from '../metering/metering.js';
import type { Metered, SettleCall } from '../metering/types.js';
import type { UpstreamPool } from '../routing/pool.js';
import { fetchMediaOutput } from '../providers/media/download.js';
import { mediaCapability, type MediaAdapter, type MediaCapability, type MediaOutput } from '../providers/media/media-types.js';
import { UpstreamError } from '../providers/types.js';

export interface MediaGatewayDeps extends AccessDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'estimateTokens' | 'priceUsage' | 'recordMaxBatch'>;
  wallet: Pick<WalletService, 'reserve' | 'settle' | 'release' | 'markInFlight'>;
  usage: UsageService;
  library: Pick<LibraryService, 'saveGeneration'>;
  metering: Metering;
  /** A queued job's handle is its Idempotency-Key's answer, written with the job (`job-key.ts`). */
  idempotency: Pick<IdempotencyStore, 'completeIn'>;
  files: Pick<FilesService, 'saveBytes' | 'readSource'>;
  notifications: Pick<NotificationsService, 'notify'>;
  jobs: JobsService;
  queue: Pick<Jobs, 'send'>;
  fetcher: SafeFetcher;
  pool: UpstreamPool;
  adapters: Map<string, MediaAdapter>;
}

/** When `negativePrompt` is omitted, image and video models get this; a supplied value replaces it ('' means none). */
export const DEFAULT_NEGATIVE_PROMPT = 'blurry, low quality, distorted, deformed, watermark, signature, jpeg artifacts';

export const negativePromptOf = (value: string | undefined) => (value === undefined ? DEFAULT_NEGATIVE_PROMPT : value.trim() === '' ? null : value);

const ROUTE_OF: Record<GatewayModel['type'], string> = {
  IMAGE: 'POST /v1/ai/image',
  VIDEO: 'POST /v1/ai/video',
  AUDIO: 'POST /v1/ai/audio',
  TEXT: 'POST /v1/ai/text',
  MULTIMODAL: 'POST /v1/ai/text',
  EMBEDDING: 'POST /v1/ai/embeddings',
};

/** A model of the wanted type and its media adapter: 404/503 from the catalog, 400 for a wrong type, 503 without an adapter. */
export async function resolveMediaModel(
  deps: Pick<MediaGatewayDeps, 'catalog' | 'adapters'>,
  slug: string,
  type: 'IMAGE' | 'VIDEO' | 'AUDIO',
  route: string,
): Promise<{ model: GatewayModel; adapter: MediaAdapter }> {
  const model = await deps.catalog.resolveForGateway(slug);
  if (model.type !== type) {
    throw badRequest(
      `The model "${model.slug}" is a ${model.type} model; ${route} needs ${type === 'IMAGE' ? 'an' : 'a'} ${type} model (${ROUTE_OF[model.type]} serves this one).`,
      {
        model: model.slug,
        type: model.type,
      },
    );
  }
  const adapter = deps.adapters.get(model.providerSlug);
  if (!adapter) {
    throw new AppError(
      503,
      'MODEL_UNAVAILABLE',
      `The model "${model.slug}" cannot be used right now: its provider has no media connection here. Choose a different model from GET /v1/models.`,
      {
        model: model.slug,
      },
    );
  }
  return { model, adapter };
}

/** The adapter's method for a capability, or 503 MODEL_UNAVAILABLE naming what is missing. */
export function requireCapability<K extends MediaCapability>(adapter: MediaAdapter, capability: K, model: GatewayModel, what: string) {
  const method = mediaCapability(adapter, capability);
  if (!method) {
    throw new AppError(
      503,
      'MODEL_UNAVAILABLE',
      `The model "${model.slug}" cannot ${what} here: its provider adapter does not offer it. Choose a different model from GET /v1/models.`,
      {
        model: model.slug,
      },
    );
  }
  return method;
}

/** An error as the caller should see it: upstream outcomes mapped to the spec's codes, our own bugs as INTERNAL. */
export function asAppError(err: unknown, modelSlug: string): AppError {
  if (err instanceof AppError || err instanceof UpstreamError) return upstreamToAppError(err, modelSlug);
  return new AppError(500, 'INTERNAL', 'The generation failed on our side.');
}

/** Copies a provider result into our storage (credential query parameters of its URL are stripped from the record). */
export async function keepOutput(
  deps: Pick<MediaGatewayDeps, 'files' | 'fetcher'>,
  ownerId: string,
  output: MediaOutput,
  kind: FileKind,
  fallbackMimeType: string,
): Promise<{ url: string; mimeType: string; bytes: Buffer }> {
  const file = await fetchMediaOutput(deps.fetcher, output, { fallbackMimeType });
  const saved = await deps.files.saveBytes({
    ownerId,
    kind,
    contentType: file.mimeType,
    body: file.bytes,
    sourceUrl: output.kind === 'url' ? output.url : null,
  });
  return { url: saved.url, mimeType: saved.contentType, bytes: file.bytes };
}

/** A media call's settlement: who and what it is for, and the charge the metering pipeline settles (`SettleCall`). */
export interface SettleInput extends Omit<SettleCall, 'answer'> {
  userId: string;
  subscriptionId: string | null;
  model: GatewayModel | { id: string; slug: string; providerId: string | null };
  requestId: string;
  jobId?: string | null;
  operation: string;
  latencyMs: number;
  /** The request's Idempotency-Key, completed with the charge (a waiting caller's call; a job's key was answered at submit). */
  key?: KeyScope | null;
}

/** What a media route hands its call: the request's Server-Timing, and the metered request (its id and key). */
export interface MediaCallOptions {
  timing?: ServerTiming;
  request?: MeteredRequest;
}

/** A media call as the metering pipeline sees it (media calls carry their own reservation facts in `metadata`). */
const meteredOf = (input: Pick<SettleInput, 'userId' | 'subscriptionId' | 'model' | 'requestId' | 'jobId' | 'operation' | 'latencyMs' | 'key'>): Metered => ({
  userId: input.userId,
  subscriptionId: input.subscriptionId,
  apiKeyId: null,
  model: input.model,
  requestId: input.requestId,
  jobId: input.jobId ?? null,
  operation: input.operation,
  reservedTokens: null,
  started: performance.now() - input.latencyMs,
  key: input.key ?? null,
});

const settleCallOf = (input: SettleInput): SettleCall => ({
  status: input.status,
  chargeTokens: input.chargeTokens,
  providerCostCents: input.providerCostCents,
  inputUnits: input.inputUnits,
  outputUnits: input.outputUnits,
  accountId: input.accountId,
  metadata: input.metadata,
  generation: input.generation,
});

/** The charge of a delivered generation, inside the caller's transaction (a job's end; see Metering.settle). */
export async function settleDelivered(deps: Pick<MediaGatewayDeps, 'metering'>, tx: Tx, input: SettleInput) {
  return deps.metering.settle(tx, meteredOf(input), settleCallOf(input));
}

/** The charge of a generation delivered to a waiting caller, in one statement when it can (see Metering.settleNow). */
export async function settleDeliveredNow(deps: Pick<MediaGatewayDeps, 'metering'>, input: SettleInput) {
  return deps.metering.settleNow(meteredOf(input), settleCallOf(input));
}

/** A call that delivered nothing, inside the caller's transaction (see Metering.refund). */
export async function refundFailed(
  deps: Pick<MediaGatewayDeps, 'metering'>,
  tx: Tx,
  input: Pick<SettleInput, 'userId' | 'subscriptionId' | 'model' | 'requestId' | 'jobId' | 'operation' | 'latencyMs'> & {
    error: AppError;
    metadata?: Record<string, unknown>;
  },
): Promise<void> {
  await deps.metering.refund(tx, meteredOf(input), input.error, input.metadata);
}

const JOB_NOUN: Record<JobRow['kind'], string> = { IMAGE: 'images', VIDEO: 'video', LIP_SYNC: 'lip-synced video', VIDEO_EXTEND: 'video extension' };

/**
 * Ends a job successfully, exactly once: the job row is locked and must still be open, then `charge` settles inside the
 * same transaction, the job gets its output, the owner a JOB_SUCCEEDED notification and the outbox `job.succeeded`.
 * Returns false when the job had already ended (a second run charges nothing).
 */
export async function succeedJob(
  deps: Pick<MediaGatewayDeps, 'db' | 'jobs' | 'notifications' | 'clock'>,
  jobId: string,
  charge: (tx: Tx, job: JobRow) => Promise<{ output: Record<string, unknown>; tokensConsumed: number }>,
): Promise<boolean> {
  const done = await deps.db.transaction(async (tx) => {
    const job = await deps.jobs.lockOpen(tx, jobId);
    if (!job) return false;
    const { output, tokensConsumed } = await charge(tx, job);
    await deps.jobs.update(jobId, { status: 'SUCCEEDED', output, progress: 1, tokensConsumed, errorCode: null, errorMessage: null }, tx);
    await deps.notifications.notify(tx, {
      userId: job.userId,
      type: 'JOB_SUCCEEDED',
      title: `Your ${JOB_NOUN[job.kind]} ${job.kind === 'IMAGE' ? 'are' : 'is'} ready`,
      body: `The ${job.modelSlug} job finished.`,
      payload: { jobId, kind: job.kind },
    });
    await emitDomainEvent(
      tx,
      'job.succeeded',
      { jobId, kind: job.kind, model: job.modelSlug, status: 'SUCCEEDED', output, creditsConsumed: tokensConsumed },
      { userId: job.userId, at: deps.clock.now() },
    );
    return true;
  });
  if (done) await deps.jobs.announce(jobId);
  return done;
}

/**
 * Ends a job as FAILED, once: refunds what was reserved and not delivered (`refund` writes the usage record), stores the
 * error code, notifies the owner (JOB_FAILED) and writes `job.failed` to the outbox.
 */
export async function failJob(
  deps: Pick<MediaGatewayDeps, 'db' | 'jobs' | 'notifications' | 'clock' | 'wallet'>,
  jobId: string,
  error: { code: string; message: string; details?: unknown },
  refund?: (tx: Tx, job: JobRow) => Promise<void>,
): Promise<boolean> {
  const done = await deps.db.transaction(async (tx) => {
    const job = await deps.jobs.lockOpen(tx, jobId);
    if (!job) return false;
    if (refund) await refund(tx, job);
    else await deps.wallet.release({ requestId: job.requestId, reason: `Refunded: ${error.code}` }, tx);
    await deps.jobs.update(jobId, { status: 'FAILED', errorCode: error.code, errorMessage: error.message, tokensConsumed: 0 }, tx);
    await deps.notifications.notify(tx, {
      userId: job.userId,
      type: 'JOB_FAILED',
      title: `Your ${JOB_NOUN[job.kind]} job failed`,
      body: error.message,
      payload: { jobId, kind: job.kind, errorCode: error.code },
    });
    await emitDomainEvent(
      tx,
      'job.failed',
      { jobId, kind: job.kind, model: job.modelSlug, status: 'FAILED', errorCode: error.code, errorMessage: error.message },
      { userId: job.userId, at: deps.clock.now() },
    );
    return true;
  });
  if (done) await deps.jobs.announce(jobId);
  return done;
}
