import { unkeyedRequest } from '../metering/idempotency.js';
import type { JobKind } from '../../../db/schema/jobs.js';
import type { Principal } from '../../../platform/auth/plugin.js';
import { badRequest, notFound } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';
import type { JobRow } from '../../jobs/service.js';
import { admitJob, checkAccess, type Access } from '../metering/access.js';
import { negativePromptOf, requireCapability, resolveMediaModel, type MediaCallOptions, type MediaGatewayDeps } from './common.js';
import { wavDurationSeconds } from '../providers/media/audio.js';
import { VIDEO_ASPECT_RATIOS, type MediaAdapter, type MediaFile, type VideoAspectRatio } from '../providers/media/media-types.js';
import { checkControl, controlDefault } from './controls.js';
import { checkExtra } from './extra.js';
import { MEDIA_RUN_QUEUE } from './image.js';
import { commitJobWithKey } from './job-key.js';
import { JOB_LEASE_SECONDS, priceOptionsOf, readStoredMedia, type VideoOp } from './video-common.js';
import { pollVideoJob, runVideoJob } from './video-job.js';

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

/** Video operations beyond plain generation, per adapter kind (the built-in provider renders them offline). */
const VIDEO_OPERATIONS: Record<string, ReadonlySet<'lipSync' | 'extend'>> = { local: new Set(['lipSync', 'extend']) };

export type VideoHandle = {
  jobId: string;
  status: 'QUEUED';
  creditsReserved: number;
};

/**
 * The video routes (generate, lip-sync, extend): checks, the sources kept, the price reserved and the job queued. The
 * queued job runs in video-job.ts.
 */
export function createVideoGateway(deps: MediaGatewayDeps) {
  const { catalog, files, jobs, queue } = deps;

  async function keepSource(url: string, ownerId: string, accept: 'image' | 'audio' | 'video', what: string): Promise<string> {
    const source = await files.readSource(url, { accept: [accept], what, ...(accept === 'video' ? { maxBytes: 200 * 1024 * 1024, timeoutMs: 60_000 } : {}) });
    if (source.origin === 'file') return url;
    const kind = accept === 'image' ? 'INIT_IMAGE' : accept === 'audio' ? 'AUDIO' : 'VIDEO';
    const saved = await files.saveBytes({
      ownerId,
      kind,
      contentType: source.contentType,
      body: source.bytes,
      sourceUrl: source.origin === 'remote' ? url : null,
    });
    return saved.url;
  }

  const readOwn = (url: string, accept: 'image' | 'audio' | 'video'): Promise<MediaFile> => readStoredMedia(deps, url, accept);

  /** The video of one of the caller's finished video jobs. */
  async function videoOfJob(userId: string, jobId: string): Promise<{ url: string; aspectRatio: VideoAspectRatio | null; prompt: string | null }> {
    const job = /^[0-9a-f-]{36}$/i.test(jobId) ? await jobs.get(jobId) : undefined;
    if (!job || job.userId !== userId) throw notFound(`No job ${jobId} of yours. Give the id of one of your finished video jobs, or a videoUrl.`);
    const url = (job.output as { videos?: Array<{ url?: string }> } | null)?.videos?.[0]?.url;
    if (job.status !== 'SUCCEEDED' || !url)
      throw badRequest(`The job ${jobId} has no finished video (it is ${job.status}). Wait until it SUCCEEDED, or give a videoUrl.`);
    const input = job.input as { aspectRatio?: VideoAspectRatio; prompt?: string };
    return { url, aspectRatio: input.aspectRatio ?? null, prompt: input.prompt ?? null };
  }

  function requireOperation(model: GatewayModel, adapter: MediaAdapter, op: 'lipSync' | 'extend') {
    requireCapability(adapter, 'submitVideo', model, 'make videos');
    if (!VIDEO_OPERATIONS[adapter.kind]?.has(op)) {
      throw badRequest(
        `The model "${model.slug}" does not offer ${op === 'lipSync' ? 'lip-sync' : 'video extension'}. Choose a video model that does (e.g. local/video).`,
        { model: model.slug },
      );
    }
  }

  /**
   * Reserves the fixed price (with the priced options of `extra`), stores the job, queues it and answers its
   * Idempotency-Key in one transaction; 429 QUOTA_EXCEEDED (the wallet, or the plan's concurrent jobs) leaves nothing behind.
   */
  async function queueJob(
    principal: Principal,
    model: GatewayModel,
    kind: JobKind,
    access: Access,
    input: VideoOp,
    options: MediaCallOptions & { started: number },
  ): Promise<VideoHandle> {
    const request = options.request ?? unkeyedRequest();
    const { subscriptionId, owner } = access;
    const tokens = await catalog.estimateTokens(model, { kind: 'video', seconds: input.durationSeconds }, priceOptionsOf(input));
    const jobId = request.requestId;
    const handle: VideoHandle = { jobId, status: 'QUEUED', creditsReserved: tokens };
    options.timing?.add('route', performance.now() - options.started);
    return commitJobWithKey(deps, principal.userId, request, handle, options.timing, async (tx) => {
      await admitJob(jobs, tx, owner, access.limits);
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

  return {
    async submit(principal: Principal, body: VideoBody, options: MediaCallOptions = {}): Promise<VideoHandle> {
      const started = performance.now();
      const { model, adapter } = await resolveMediaModel(deps, body.model, 'VIDEO', 'POST /v1/ai/video');
      requireCapability(adapter, 'submitVideo', model, 'make videos');
      for (const key of ['durationSeconds', 'aspectRatio', 'seedImageUrl', 'endImageUrl', 'seed'] as const) {
        if (body[key] !== undefined) checkControl(model, key, body[key]);
      }
      const priceOptions = body.extra ? checkExtra(model, adapter.extraKeys?.video, body.extra) : null;
      const access = await checkAccess(deps, principal, model);
      const seedImageUrl = body.seedImageUrl ? await keepSource(body.seedImageUrl, principal.userId, 'image', 'the start frame (seedImageUrl)') : null;
      const endImageUrl = body.endImageUrl ? await keepSource(body.endImageUrl, principal.userId, 'image', 'the end frame (endImageUrl)') : null;
      return queueJob(
        principal,
        model,
        'VIDEO',
        access,
        {
          op: 'generate',
          prompt: body.prompt,
          durationSeconds: durationOf(model, body.durationSeconds),
          aspectRatio: aspectOf(model, body.aspectRatio),
          negativePrompt: negativePromptOf(body.negativePrompt),
          seed: body.seed ?? null,
          seedImageUrl,
          endImageUrl,
          extra: body.extra ?? {},
          priceOptions,
        },
        { ...options, started },
      );
    },

    async lipSync(principal: Principal, body: LipSyncBody, options: MediaCallOptions = {}): Promise<VideoHandle> {
      const started = performance.now();
      if ((body.videoUrl === undefined) === (body.jobId === undefined))
        throw badRequest('Give exactly one of videoUrl and jobId: the video to lip-sync.', [{ field: 'videoUrl', message: 'or jobId, exactly one' }]);
      if ((body.audioUrl === undefined) === (body.text === undefined))
        throw badRequest('Give exactly one of audioUrl and text: what the person should say.', [{ field: 'audioUrl', message: 'or text, exactly one' }]);
      if (body.voice !== undefined && body.text === undefined)
        throw badRequest('voice applies only with text (the audio of audioUrl already has its voice).', [{ field: 'voice', message: 'needs text' }]);
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
      const max =
        typeof (model.capabilities.controls.durationSeconds as { max?: unknown } | undefined)?.max === 'number'
          ? (model.capabilities.controls.durationSeconds as { max: number }).max
          : 10;
      return queueJob(
        principal,
        model,
        'LIP_SYNC',
        access,
        {
          op: 'lipSync',
          prompt: body.text ? `Lip-sync: ${body.text}` : 'Lip-sync to the supplied audio',
          durationSeconds: Math.min(max, Math.max(1, Math.ceil(seconds))),
          aspectRatio: aspectOf(model, fromJob?.aspectRatio),
          videoUrl,
          audioUrl,
          text: body.text ?? null,
          voice: body.voice ?? null,
        },
        { ...options, started },
      );
    },

    async extend(principal: Principal, body: ExtendBody, options: MediaCallOptions = {}): Promise<VideoHandle> {
      const started = performance.now();
      if ((body.videoUrl === undefined) === (body.jobId === undefined))
        throw badRequest('Give exactly one of jobId and videoUrl: the video to extend.', [{ field: 'jobId', message: 'or videoUrl, exactly one' }]);
      const { model, adapter } = await resolveMediaModel(deps, body.model, 'VIDEO', 'POST /v1/ai/video/extend');
      requireOperation(model, adapter, 'extend');
      if (body.durationSeconds !== undefined) checkControl(model, 'durationSeconds', body.durationSeconds);
      const access = await checkAccess(deps, principal, model);
      const fromJob = body.jobId ? await videoOfJob(principal.userId, body.jobId) : null;
      const videoUrl = fromJob ? fromJob.url : await keepSource(body.videoUrl!, principal.userId, 'video', 'the video (videoUrl)');
      return queueJob(
        principal,
        model,
        'VIDEO_EXTEND',
        access,
        {
          op: 'extend',
          prompt: body.prompt ?? (fromJob?.prompt ? `Continue: ${fromJob.prompt}` : 'Continue the scene'),
          durationSeconds: durationOf(model, body.durationSeconds),
          aspectRatio: aspectOf(model, fromJob?.aspectRatio),
          videoUrl,
        },
        { ...options, started },
      );
    },

    /** The run queue: submits the task upstream once (an external id already stored means it was), then schedules polls. */
    runJob: (job: JobRow): Promise<void> => runVideoJob(deps, job),

    /** The poll queue: asks the provider, stores progress, and on the result copies, settles and ends the job. */
    pollJob: (job: JobRow): Promise<void> => pollVideoJob(deps, job),
  };
}

export type VideoGateway = ReturnType<typeof createVideoGateway>;
