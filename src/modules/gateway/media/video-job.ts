import { AppError } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import type { JobRow } from '../../jobs/service.js';
import { asAppError, failJob, keepOutput, refundFailed, requireCapability, settleDelivered, succeedJob, type MediaGatewayDeps } from './common.js';
import { seedFrom } from '../providers/local/media.js';
import type { MediaAdapter, UpstreamCredential, VideoStatus, VideoSubmission } from '../providers/media/media-types.js';
import { JOB_LEASE_SECONDS, priceOptionsOf, readStoredMedia, type VideoInput } from './video-common.js';

export const MEDIA_POLL_QUEUE = 'media.job-poll';
/** A video job still unfinished this long after it started is failed (TIMEOUT) and refunded. */
export const MAX_VIDEO_JOB_MS = 60 * 60 * 1000;
/** Polls that fail in a row before the job is given up. */
const MAX_POLL_FAILURES = 10;

/** Parameters the catalog fixes for a model upstream (`capabilities.flags.upstreamParams`). */
const upstreamParamsOf = (model: GatewayModel): Record<string, unknown> => {
  const params = model.capabilities.flags?.upstreamParams;
  return params && typeof params === 'object' ? (params as Record<string, unknown>) : {};
};

const pollDelaySeconds = (estimatedSeconds: number | null) => Math.min(15, Math.max(1, Math.ceil((estimatedSeconds ?? 8) / 4)));

const schedulePoll = (deps: Pick<MediaGatewayDeps, 'queue'>, job: { id: string; estimatedSeconds: number | null }) =>
  deps.queue.send(MEDIA_POLL_QUEUE, { jobId: job.id }, { startAfterSeconds: pollDelaySeconds(job.estimatedSeconds) });

async function submitUpstream(
  deps: MediaGatewayDeps,
  input: VideoInput,
  model: GatewayModel,
  adapter: MediaAdapter,
  credential: UpstreamCredential,
): Promise<VideoSubmission> {
  const readOwn = (url: string, accept: 'image' | 'audio' | 'video') => readStoredMedia(deps, url, accept);
  const submit = requireCapability(adapter, 'submitVideo', model, 'make videos');
  const base = {
    model: model.upstreamModel,
    durationSeconds: input.durationSeconds,
    aspectRatio: input.aspectRatio,
    extra: {} as Record<string, unknown>,
    negativePrompt: null,
    seed: null,
  };
  switch (input.op) {
    case 'generate':
      return submit(credential, {
        ...base,
        prompt: input.prompt,
        negativePrompt: input.negativePrompt,
        seed: input.seed,
        // The catalog's own upstream parameters (a model sold as "pro" is sent as pro) come last: a caller's extra keys
        // add provider options but never change what the model's price is for.
        extra: Object.assign({}, input.extra, upstreamParamsOf(model)),
        seedImage: input.seedImageUrl ? await readOwn(input.seedImageUrl, 'image') : undefined,
        endImage: input.endImageUrl ? await readOwn(input.endImageUrl, 'image') : undefined,
      });
    case 'lipSync': {
      const video = await readOwn(input.videoUrl, 'video');
      let audio: Buffer;
      if (input.audioUrl) audio = (await readOwn(input.audioUrl, 'audio')).bytes;
      else {
        const speak = requireCapability(adapter, 'generateSpeech', model, 'speak text for lip-sync');
        audio = (await speak(credential, { model: model.upstreamModel, text: input.text ?? '', voice: input.voice })).bytes;
      }
      // The built-in provider renders a clip seeded by both sources: same inputs, same clip.
      return submit(credential, { ...base, prompt: input.prompt, seed: seedFrom('lip-sync', video.bytes, audio) });
    }
    case 'extend': {
      const video = await readOwn(input.videoUrl, 'video');
      return submit(credential, { ...base, prompt: input.prompt, seed: seedFrom('extend', video.bytes, input.prompt) });
    }
  }
}

/** Who and what a video job's charge or refund is for. */
const jobCall = (job: JobRow, input: VideoInput) => ({
  userId: job.userId,
  subscriptionId: job.subscriptionId,
  model: { id: job.modelId, slug: job.modelSlug, providerId: input.providerId },
  requestId: job.requestId,
  jobId: job.id,
  operation: `video.${input.op}`,
});

async function fail(deps: MediaGatewayDeps, job: JobRow, error: AppError, started = performance.now()) {
  const input = job.input as unknown as VideoInput;
  await failJob(deps, job.id, error, (tx) =>
    refundFailed(deps, tx, {
      ...jobCall(job, input),
      error,
      latencyMs: performance.now() - started,
    }),
  );
}

/** The run queue: submits the task upstream once (an external id already stored means it was), then schedules polls. */
export async function runVideoJob(deps: MediaGatewayDeps, job: JobRow): Promise<void> {
  const { clock, catalog, pool, wallet, jobs } = deps;
  if (job.externalId) {
    await schedulePoll(deps, job);
    return;
  }
  const input = job.input as unknown as VideoInput;
  // Claimed before the provider is called: from now on a cancel finds the job being handed over (409) instead of
  // refunding a task the provider may be making already.
  if (!(await jobs.update(job.id, { startedAt: clock.now() }))) return;
  let submitted: { value: VideoSubmission; accountId: string };
  try {
    const model = await catalog.resolveForGateway(job.modelSlug);
    const adapter = deps.adapters.get(model.providerSlug);
    if (!adapter) throw new AppError(503, 'MODEL_UNAVAILABLE', `The model "${model.slug}" has no media connection here.`);
    submitted = await pool.run(model.providerSlug, (_text, credential) => submitUpstream(deps, input, model, adapter, credential));
  } catch (err) {
    await fail(deps, job, asAppError(err, job.modelSlug));
    return;
  }
  const updated = await jobs.update(job.id, {
    status: 'RUNNING',
    startedAt: clock.now(),
    externalId: submitted.value.externalId,
    providerAccountId: submitted.accountId,
    estimatedSeconds: submitted.value.estimatedSeconds,
    progress: 0,
  });
  if (!updated) return; // cancelled meanwhile (the cancel handler stops the upstream task)
  await wallet.markInFlight({ requestId: job.requestId, leaseSeconds: JOB_LEASE_SECONDS });
  await schedulePoll(deps, updated);
}

/** The poll queue: asks the provider, stores progress, and on the result copies, settles and ends the job. */
export async function pollVideoJob(deps: MediaGatewayDeps, job: JobRow): Promise<void> {
  const { clock, logger, catalog, pool, wallet, jobs, queue } = deps;
  const input = job.input as unknown as VideoInput;
  if (!job.externalId) return;
  const started = performance.now();
  let model: GatewayModel;
  let adapter: MediaAdapter;
  try {
    model = await catalog.resolveForGateway(job.modelSlug);
    adapter = deps.adapters.get(model.providerSlug)!;
    if (!adapter?.pollVideo) throw new AppError(503, 'MODEL_UNAVAILABLE', `The model "${model.slug}" has no video connection here.`);
  } catch (err) {
    await fail(deps, job, asAppError(err, job.modelSlug));
    return;
  }
  if (job.startedAt && clock.now().getTime() - job.startedAt.getTime() > MAX_VIDEO_JOB_MS) {
    await fail(
      deps,
      job,
      new AppError(504, 'TIMEOUT', `The provider did not finish the video within ${MAX_VIDEO_JOB_MS / 60_000} minutes; the reserved credits were refunded.`),
    );
    await stopVideoUpstream(deps, job);
    return;
  }
  const credential = (job.providerAccountId && pool.credentialById(job.providerAccountId)) || null;
  let status: VideoStatus;
  try {
    status = credential
      ? await adapter.pollVideo(credential, job.externalId)
      : (await pool.run(model.providerSlug, (_text, c) => adapter.pollVideo!(c, job.externalId!))).value;
  } catch (err) {
    const failures = job.pollFailures + 1;
    logger.warn({ err, jobId: job.id, failures }, 'polling a video job failed');
    if (failures >= MAX_POLL_FAILURES) {
      await fail(deps, job, asAppError(err, job.modelSlug));
      return;
    }
    const updated = await jobs.update(job.id, { pollFailures: failures });
    if (updated)
      await queue.send(MEDIA_POLL_QUEUE, { jobId: job.id }, { startAfterSeconds: pollDelaySeconds(job.estimatedSeconds) * 2 ** Math.min(failures, 4) });
    return;
  }
  if (status.status === 'QUEUED' || status.status === 'RUNNING') {
    const progress = status.progress ?? job.progress;
    const changed = progress !== job.progress || job.pollFailures !== 0;
    const updated = changed ? await jobs.update(job.id, { progress: Math.min(0.99, Math.max(0, progress)), pollFailures: 0 }) : job;
    if (!updated) return;
    await wallet.markInFlight({ requestId: job.requestId, leaseSeconds: JOB_LEASE_SECONDS });
    await schedulePoll(deps, job);
    return;
  }
  if (status.status === 'FAILED') {
    const moderation = /moderat|safety|content|policy/i.test(`${status.error.code} ${status.error.message}`);
    const error = moderation
      ? new AppError(400, 'BAD_REQUEST', `The provider refused the video: ${status.error.message}`, { upstream: status.error })
      : new AppError(503, 'PROVIDER_UNAVAILABLE', `The provider failed to make the video: ${status.error.message}`, { upstream: status.error });
    await fail(deps, job, error, started);
    return;
  }
  const finished = status as Extract<VideoStatus, { status: 'SUCCEEDED' }>;
  let kept: { url: string; mimeType: string };
  try {
    kept = await keepOutput(deps, job.userId, finished.video, 'VIDEO', 'video/mp4');
  } catch (err) {
    await fail(deps, job, asAppError(err, job.modelSlug), started);
    return;
  }
  const seconds = finished.durationSeconds ?? input.durationSeconds;
  const cost = await catalog.priceUsage(model, { seconds: input.durationSeconds }, priceOptionsOf(input)).catch(() => ({ providerCostCents: 0 }));
  const videos = [{ url: kept.url, mimeType: kept.mimeType, durationSeconds: seconds }];
  await succeedJob(deps, job.id, async (tx) => {
    // The price was fixed at submit: the reservation is what the job costs.
    const settled = await settleDelivered(deps, tx, {
      ...jobCall(job, input),
      status: 'SUCCESS',
      chargeTokens: job.tokensReserved,
      providerCostCents: cost.providerCostCents,
      inputUnits: input.durationSeconds,
      outputUnits: Math.round(seconds),
      latencyMs: job.startedAt ? clock.now().getTime() - job.startedAt.getTime() : 0,
      accountId: job.providerAccountId,
      metadata: {
        op: input.op,
        durationSeconds: input.durationSeconds,
        aspectRatio: input.aspectRatio,
        externalId: job.externalId,
        ...(input.apiKeyId ? { apiKeyId: input.apiKeyId } : {}),
      },
      generation: {
        kind: 'VIDEO',
        prompt: input.prompt,
        output: { videos },
        thumbnailUrl: null,
        tags: input.op === 'generate' ? [] : [input.op === 'lipSync' ? 'lip-sync' : 'extended'],
      },
    });
    return { output: { videos, usage: { durationSeconds: seconds, creditsConsumed: settled.chargedTokens } }, tokensConsumed: settled.chargedTokens };
  });
}

/**
 * Tells the provider to stop a task nobody wants any more. True only when it confirmed the task stopped unbilled;
 * false when its adapter cannot stop tasks (MiniMax, Kling, Google) or the account is gone.
 */
export async function stopVideoUpstream(deps: MediaGatewayDeps, job: JobRow): Promise<boolean> {
  if (!job.externalId || !job.providerAccountId) return false;
  const model = await deps.catalog.resolveForGateway(job.modelSlug).catch(() => null);
  const adapter = model ? deps.adapters.get(model.providerSlug) : undefined;
  const credential = deps.pool.credentialById(job.providerAccountId);
  if (!adapter?.cancelVideo || !credential) return false;
  return adapter.cancelVideo(credential, job.externalId);
}
