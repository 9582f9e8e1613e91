import { meteredRequestId } from './metering.js';
import type { JobKind } from '../../db/schema/jobs.js';
import type { Principal } from '../../platform/auth/plugin.js';
import { AppError, badRequest, notFound } from '../../platform/http/errors.js';
import type { GatewayModel } from '../catalog/service.js';
import type { JobRow } from '../jobs/service.js';
import { checkAccess } from './access.js';
import { asAppError, failJob, keepOutput, negativePromptOf, refundFailed, requireCapability, resolveMediaModel, settleDelivered, succeedJob, type MediaGatewayDeps } from './media-common.js';
import { wavDurationSeconds } from './providers/media/audio.js';
import { seedFrom } from './providers/media/local-media.js';
import { VIDEO_ASPECT_RATIOS, type MediaAdapter, type MediaFile, type UpstreamCredential, type VideoAspectRatio, type VideoStatus, type VideoSubmission } from './providers/media/media-types.js';
import { checkControl, checkExtra, controlDefault } from './controls.js';
import { MEDIA_RUN_QUEUE } from './image.js';

export const MEDIA_POLL_QUEUE = 'media.job-poll';
/** A video job still unfinished this long after it started is failed (TIMEOUT) and refunded. */
export const MAX_VIDEO_JOB_MS = 60 * 60 * 1000;
/** Polls that fail in a row before the job is given up. */
const MAX_POLL_FAILURES = 10;
/** A running job's reservation lease, renewed on every poll, so the crash sweeper never takes a live job. */
const JOB_LEASE_SECONDS = 2 * 60 * 60;

export interface VideoBody {
  model: string;
  prompt: string;
  durationSeconds?: number;
  aspectRatio?: VideoAspectRatio;
  seedImageUrl?: string;
  endImageUrl?: string;
  negativePrompt?: string;
  seed?: number;
  extra?: Record<string, unknown>;
}

export interface LipSyncBody {
  model: string;
  videoUrl?: string;
  jobId?: string;
  audioUrl?: string;
  text?: string;
  voice?: string;
}

export interface ExtendBody {
  model: string;
  videoUrl?: string;
  jobId?: string;
  prompt?: string;
  durationSeconds?: number;
}

type VideoOp = {
  prompt: string;
  durationSeconds: number;
  aspectRatio: VideoAspectRatio;
} & (
  | { op: 'generate'; negativePrompt: string | null; seed: number | null; seedImageUrl: string | null; endImageUrl: string | null; extra: Record<string, unknown> }
  | { op: 'lipSync'; videoUrl: string; audioUrl: string | null; text: string | null; voice: string | null }
  | { op: 'extend'; videoUrl: string }
);

type VideoInput = VideoOp & { owner: { userId: string } | { workspaceId: string }; providerId: string | null; apiKeyId: string | null };

/** Video operations beyond plain generation, per adapter kind (the built-in provider renders them offline). */
const VIDEO_OPERATIONS: Record<string, ReadonlySet<'lipSync' | 'extend'>> = { local: new Set(['lipSync', 'extend']) };

export interface VideoHandle {
  jobId: string;
  status: 'QUEUED';
  creditsReserved: number;
}

const pollDelaySeconds = (estimatedSeconds: number | null) => Math.min(15, Math.max(1, Math.ceil((estimatedSeconds ?? 8) / 4)));

export function createVideoGateway(deps: MediaGatewayDeps) {
  const { db, clock, logger, catalog, pool, files, wallet, jobs, queue } = deps;

  async function keepSource(url: string, ownerId: string, accept: 'image' | 'audio' | 'video', what: string): Promise<string> {
    const source = await files.readSource(url, { accept: [accept], what, ...(accept === 'video' ? { maxBytes: 200 * 1024 * 1024, timeoutMs: 60_000 } : {}) });
    if (source.origin === 'file') return url;
    const kind = accept === 'image' ? 'INIT_IMAGE' : accept === 'audio' ? 'AUDIO' : 'VIDEO';
    const saved = await files.saveBytes({ ownerId, kind, contentType: source.contentType, body: source.bytes, sourceUrl: source.origin === 'remote' ? url : null });
    return saved.url;
  }

  const readOwn = async (url: string, accept: 'image' | 'audio' | 'video'): Promise<MediaFile> => {
    const source = await files.readSource(url, { accept: [accept], what: `the stored ${accept}`, maxBytes: 200 * 1024 * 1024 });
    return { bytes: source.bytes, mimeType: source.contentType };
  };

  /** The video of one of the caller's finished video jobs. */
  async function videoOfJob(userId: string, jobId: string): Promise<{ url: string; aspectRatio: VideoAspectRatio | null; prompt: string | null }> {
    const job = /^[0-9a-f-]{36}$/i.test(jobId) ? await jobs.get(jobId) : undefined;
    if (!job || job.userId !== userId) throw notFound(`No job ${jobId} of yours. Give the id of one of your finished video jobs, or a videoUrl.`);
    const url = (job.output as { videos?: Array<{ url?: string }> } | null)?.videos?.[0]?.url;
    if (job.status !== 'SUCCEEDED' || !url) throw badRequest(`The job ${jobId} has no finished video (it is ${job.status}). Wait until it SUCCEEDED, or give a videoUrl.`);
    const input = job.input as { aspectRatio?: VideoAspectRatio; prompt?: string };
    return { url, aspectRatio: input.aspectRatio ?? null, prompt: input.prompt ?? null };
  }

  function requireOperation(model: GatewayModel, adapter: MediaAdapter, op: 'lipSync' | 'extend') {
    requireCapability(adapter, 'submitVideo', model, 'make videos');
    if (!VIDEO_OPERATIONS[adapter.kind]?.has(op)) {
      throw badRequest(`The model "${model.slug}" does not offer ${op === 'lipSync' ? 'lip-sync' : 'video extension'}. Choose a video model that does (e.g. local/video).`, { model: model.slug });
    }
  }

  /** Reserves the fixed price, stores the job and queues it in one transaction; 429 QUOTA_EXCEEDED leaves nothing behind. */
  async function queueJob(principal: Principal, model: GatewayModel, kind: JobKind, subscriptionId: string, owner: VideoInput['owner'], input: VideoOp): Promise<VideoHandle> {
    const tokens = await catalog.estimateTokens(model, { kind: 'video', seconds: input.durationSeconds });
    const jobId = meteredRequestId();
    await db.transaction(async (tx) => {
      await jobs.create(
        {
          id: jobId,
          userId: principal.userId,
          kind,
          modelId: model.id,
          modelSlug: model.slug,
          subscriptionId,
          requestId: jobId,
          input: { ...input, owner, providerId: model.providerId, apiKeyId: principal.apiKeyId },
          tokensReserved: tokens,
        },
        tx,
      );
      const call = { model, operation: `video.${input.op}`, tokens, requestId: jobId, jobId, leaseSeconds: JOB_LEASE_SECONDS };
      await deps.metering.reserveChecked(principal, { subscriptionId, owner }, call, tx);
      // The job, its tokens and its queue message commit together: no job is left QUEUED with nothing to run it.
      await queue.send(MEDIA_RUN_QUEUE, { jobId }, { tx });
    });
    return { jobId, status: 'QUEUED', creditsReserved: tokens };
  }

  const aspectOf = (model: GatewayModel, asked: VideoAspectRatio | undefined | null): VideoAspectRatio => {
    if (asked) return asked;
    const fallback = controlDefault(model, 'aspectRatio');
    return (VIDEO_ASPECT_RATIOS as readonly unknown[]).includes(fallback) ? (fallback as VideoAspectRatio) : '16:9';
  };
  const durationOf = (model: GatewayModel, asked: number | undefined) => {
    const fallback = controlDefault(model, 'durationSeconds');
    return asked ?? (typeof fallback === 'number' ? fallback : 5);
  };

  async function submitUpstream(job: JobRow, input: VideoInput, model: GatewayModel, adapter: MediaAdapter, credential: UpstreamCredential): Promise<VideoSubmission> {
    const submit = requireCapability(adapter, 'submitVideo', model, 'make videos');
    const base = { model: model.upstreamModel, durationSeconds: input.durationSeconds, aspectRatio: input.aspectRatio, extra: {} as Record<string, unknown>, negativePrompt: null, seed: null };
    switch (input.op) {
      case 'generate':
        return submit(credential, {
          ...base,
          prompt: input.prompt,
          negativePrompt: input.negativePrompt,
          seed: input.seed,
          extra: input.extra,
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

  async function fail(job: JobRow, error: AppError, started = performance.now()) {
    const input = job.input as unknown as VideoInput;
    await failJob(deps, job.id, error, (tx) =>
      refundFailed(deps, tx, {
        userId: job.userId,
        subscriptionId: job.subscriptionId,
        model: { id: job.modelId, slug: job.modelSlug, providerId: input.providerId },
        requestId: job.requestId,
        jobId: job.id,
        operation: `video.${input.op}`,
        error,
        latencyMs: performance.now() - started,
      }),
    );
  }

  const schedulePoll = (job: { id: string; estimatedSeconds: number | null }) =>
    queue.send(MEDIA_POLL_QUEUE, { jobId: job.id }, { startAfterSeconds: pollDelaySeconds(job.estimatedSeconds) });

  return {
    async submit(principal: Principal, body: VideoBody): Promise<VideoHandle> {
      const { model, adapter } = await resolveMediaModel(deps, body.model, 'VIDEO', 'POST /v1/ai/video');
      requireCapability(adapter, 'submitVideo', model, 'make videos');
      for (const key of ['durationSeconds', 'aspectRatio', 'seedImageUrl', 'endImageUrl', 'seed'] as const) {
        if (body[key] !== undefined) checkControl(model, key, body[key]);
      }
      if (body.extra) checkExtra(model, body.extra);
      const access = await checkAccess(deps, principal, model);
      const seedImageUrl = body.seedImageUrl ? await keepSource(body.seedImageUrl, principal.userId, 'image', 'the start frame (seedImageUrl)') : null;
      const endImageUrl = body.endImageUrl ? await keepSource(body.endImageUrl, principal.userId, 'image', 'the end frame (endImageUrl)') : null;
      return queueJob(principal, model, 'VIDEO', access.subscriptionId, access.owner, {
        op: 'generate',
        prompt: body.prompt,
        durationSeconds: durationOf(model, body.durationSeconds),
        aspectRatio: aspectOf(model, body.aspectRatio),
        negativePrompt: negativePromptOf(body.negativePrompt),
        seed: body.seed ?? null,
        seedImageUrl,
        endImageUrl,
        extra: body.extra ?? {},
      });
    },

    async lipSync(principal: Principal, body: LipSyncBody): Promise<VideoHandle> {
      if ((body.videoUrl === undefined) === (body.jobId === undefined)) throw badRequest('Give exactly one of videoUrl and jobId: the video to lip-sync.', [{ field: 'videoUrl', message: 'or jobId, exactly one' }]);
      if ((body.audioUrl === undefined) === (body.text === undefined)) throw badRequest('Give exactly one of audioUrl and text: what the person should say.', [{ field: 'audioUrl', message: 'or text, exactly one' }]);
      if (body.voice !== undefined && body.text === undefined) throw badRequest('voice applies only with text (the audio of audioUrl already has its voice).', [{ field: 'voice', message: 'needs text' }]);
      const { model, adapter } = await resolveMediaModel(deps, body.model, 'VIDEO', 'POST /v1/ai/video/lip-sync');
      requireOperation(model, adapter, 'lipSync');
      if (body.text !== undefined) requireCapability(adapter, 'generateSpeech', model, 'speak text for lip-sync');
      const access = await checkAccess(deps, principal, model);
      const fromJob = body.jobId ? await videoOfJob(principal.userId, body.jobId) : null;
      const videoUrl = fromJob ? fromJob.url : await keepSource(body.videoUrl!, principal.userId, 'video', 'the video (videoUrl)');
      let audioUrl: string | null = null;
      let seconds: number;
      if (body.audioUrl) {
        audioUrl = await keepSource(body.audioUrl, principal.userId, 'audio', 'the audio (audioUrl)');
        seconds = wavDurationSeconds((await readOwn(audioUrl, 'audio')).bytes) ?? 5;
      } else {
        // About 15 characters a second of speech.
        seconds = [...body.text!].length / 15;
      }
      const max = typeof (model.capabilities.controls.durationSeconds as { max?: unknown } | undefined)?.max === 'number' ? ((model.capabilities.controls.durationSeconds as { max: number }).max) : 10;
      return queueJob(principal, model, 'LIP_SYNC', access.subscriptionId, access.owner, {
        op: 'lipSync',
        prompt: body.text ? `Lip-sync: ${body.text}` : 'Lip-sync to the supplied audio',
        durationSeconds: Math.min(max, Math.max(1, Math.ceil(seconds))),
        aspectRatio: aspectOf(model, fromJob?.aspectRatio),
        videoUrl,
        audioUrl,
        text: body.text ?? null,
        voice: body.voice ?? null,
      });
    },

    async extend(principal: Principal, body: ExtendBody): Promise<VideoHandle> {
      if ((body.videoUrl === undefined) === (body.jobId === undefined)) throw badRequest('Give exactly one of jobId and videoUrl: the video to extend.', [{ field: 'jobId', message: 'or videoUrl, exactly one' }]);
      const { model, adapter } = await resolveMediaModel(deps, body.model, 'VIDEO', 'POST /v1/ai/video/extend');
      requireOperation(model, adapter, 'extend');
      if (body.durationSeconds !== undefined) checkControl(model, 'durationSeconds', body.durationSeconds);
      const access = await checkAccess(deps, principal, model);
      const fromJob = body.jobId ? await videoOfJob(principal.userId, body.jobId) : null;
      const videoUrl = fromJob ? fromJob.url : await keepSource(body.videoUrl!, principal.userId, 'video', 'the video (videoUrl)');
      return queueJob(principal, model, 'VIDEO_EXTEND', access.subscriptionId, access.owner, {
        op: 'extend',
        prompt: body.prompt ?? (fromJob?.prompt ? `Continue: ${fromJob.prompt}` : 'Continue the scene'),
        durationSeconds: durationOf(model, body.durationSeconds),
        aspectRatio: aspectOf(model, fromJob?.aspectRatio),
        videoUrl,
      });
    },

    /** The run queue: submits the task upstream once (an external id already stored means it was), then schedules polls. */
    async runJob(job: JobRow): Promise<void> {
      if (job.externalId) {
        await schedulePoll(job);
        return;
      }
      const input = job.input as unknown as VideoInput;
      let submitted: { value: VideoSubmission; accountId: string };
      try {
        const model = await catalog.resolveForGateway(job.modelSlug);
        const adapter = deps.adapters.get(model.providerSlug);
        if (!adapter) throw new AppError(503, 'MODEL_UNAVAILABLE', `The model "${model.slug}" has no media connection here.`);
        submitted = await pool.run(model.providerSlug, (_text, credential) => submitUpstream(job, input, model, adapter, credential));
      } catch (err) {
        await fail(job, asAppError(err, job.modelSlug));
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
      await schedulePoll(updated);
    },

    /** The poll queue: asks the provider, stores progress, and on the result copies, settles and ends the job. */
    async pollJob(job: JobRow): Promise<void> {
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
        await fail(job, asAppError(err, job.modelSlug));
        return;
      }
      if (job.startedAt && clock.now().getTime() - job.startedAt.getTime() > MAX_VIDEO_JOB_MS) {
        await fail(job, new AppError(504, 'TIMEOUT', `The provider did not finish the video within ${MAX_VIDEO_JOB_MS / 60_000} minutes; the reserved credits were refunded.`));
        await this.stopUpstream(job);
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
          await fail(job, asAppError(err, job.modelSlug));
          return;
        }
        const updated = await jobs.update(job.id, { pollFailures: failures });
        if (updated) await queue.send(MEDIA_POLL_QUEUE, { jobId: job.id }, { startAfterSeconds: pollDelaySeconds(job.estimatedSeconds) * 2 ** Math.min(failures, 4) });
        return;
      }
      if (status.status === 'QUEUED' || status.status === 'RUNNING') {
        const progress = status.progress ?? job.progress;
        const changed = progress !== job.progress || job.pollFailures !== 0;
        const updated = changed ? await jobs.update(job.id, { progress: Math.min(0.99, Math.max(0, progress)), pollFailures: 0 }) : job;
        if (!updated) return;
        await wallet.markInFlight({ requestId: job.requestId, leaseSeconds: JOB_LEASE_SECONDS });
        await schedulePoll(job);
        return;
      }
      if (status.status === 'FAILED') {
        const moderation = /moderat|safety|content|policy/i.test(`${status.error.code} ${status.error.message}`);
        const error = moderation
          ? new AppError(400, 'BAD_REQUEST', `The provider refused the video: ${status.error.message}`, { upstream: status.error })
          : new AppError(503, 'PROVIDER_UNAVAILABLE', `The provider failed to make the video: ${status.error.message}`, { upstream: status.error });
        await fail(job, error, started);
        return;
      }
      const finished = status as Extract<VideoStatus, { status: 'SUCCEEDED' }>;
      let kept: { url: string; mimeType: string };
      try {
        kept = await keepOutput(deps, job.userId, finished.video, 'VIDEO', 'video/mp4');
      } catch (err) {
        await fail(job, asAppError(err, job.modelSlug), started);
        return;
      }
      const seconds = finished.durationSeconds ?? input.durationSeconds;
      const cost = await catalog.priceUsage(model, { seconds: input.durationSeconds }).catch(() => ({ providerCostCents: 0 }));
      const videos = [{ url: kept.url, mimeType: kept.mimeType, durationSeconds: seconds }];
      await succeedJob(deps, job.id, async (tx) => {
        // The price was fixed at submit: the reservation is what the job costs.
        const settled = await settleDelivered(deps, tx, {
          userId: job.userId,
          subscriptionId: job.subscriptionId,
          model: { id: job.modelId, slug: job.modelSlug, providerId: input.providerId },
          requestId: job.requestId,
          jobId: job.id,
          operation: `video.${input.op}`,
          status: 'SUCCESS',
          chargeTokens: job.tokensReserved,
          providerCostCents: cost.providerCostCents,
          inputUnits: input.durationSeconds,
          outputUnits: Math.round(seconds),
          latencyMs: job.startedAt ? clock.now().getTime() - job.startedAt.getTime() : 0,
          accountId: job.providerAccountId,
          metadata: { op: input.op, durationSeconds: input.durationSeconds, aspectRatio: input.aspectRatio, externalId: job.externalId, ...(input.apiKeyId ? { apiKeyId: input.apiKeyId } : {}) },
          generation: { kind: 'VIDEO', prompt: input.prompt, output: { videos }, thumbnailUrl: null, tags: input.op === 'generate' ? [] : [input.op === 'lipSync' ? 'lip-sync' : 'extended'] },
        });
        return { output: { videos, usage: { durationSeconds: seconds, creditsConsumed: settled.chargedTokens } }, tokensConsumed: settled.chargedTokens };
      });
    },

    /** Best effort: tells the provider to stop a task nobody wants any more. */
    async stopUpstream(job: JobRow): Promise<void> {
      if (!job.externalId || !job.providerAccountId) return;
      const model = await catalog.resolveForGateway(job.modelSlug).catch(() => null);
      const adapter = model ? deps.adapters.get(model.providerSlug) : undefined;
      const credential = pool.credentialById(job.providerAccountId);
      if (adapter?.cancelVideo && credential) await adapter.cancelVideo(credential, job.externalId);
    },
  };
}

export type VideoGateway = ReturnType<typeof createVideoGateway>;
