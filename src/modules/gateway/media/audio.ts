import { unkeyedRequest } from '../metering/idempotency.js';
import { startCallSpan } from '../routing/call-span.js';
import type { Principal } from '../../../platform/auth/plugin.js';
import { badRequest } from '../../../platform/http/errors.js';
import { checkAccess } from '../metering/access.js';
import { checkControl } from './controls.js';
import { checkExtra } from './extra.js';
import {
  asAppError,
  keepOutput,
  refundFailed,
  requireCapability,
  resolveMediaModel,
  settleDeliveredNow,
  type MediaCallOptions,
  type MediaGatewayDeps,
} from './common.js';
import type { AudioResult } from '../providers/media/media-types.js';

export const AUDIO_ROUTE = 'POST /v1/ai/audio';

export interface AudioBody {
  model: string;
  /** Speech: the words to say. */
  text?: string;
  /** Music: what the track should sound like (genre, instruments, tempo). */
  description?: string;
  voice?: string;
  speed?: number;
  /** Accepted only to answer music calls clearly: the model decides the length. */
  durationSeconds?: number;
  seed?: number;
  extra?: Record<string, unknown>;
}

export interface AudioAnswer {
  audio: { url: string; mimeType: string; durationSeconds: number | null };
  usage: { characters: number | null; durationSeconds: number | null; creditsConsumed: number };
  model: string;
  requestId: string;
}

const isMusic = (features: readonly string[]) => features.includes('MUSIC') && !features.includes('TTS');

/** `POST /v1/ai/audio`, synchronous: speech models speak `text` (WAV); music models make a track from a `description`. */
export function createAudioGateway(deps: MediaGatewayDeps) {
  const { db, logger, catalog, pool } = deps;

  return {
    async generate(principal: Principal, body: AudioBody, options: MediaCallOptions = {}): Promise<AudioAnswer> {
      const { timing } = options;
      const request = options.request ?? unkeyedRequest();
      const started = performance.now();
      const { model, adapter } = await resolveMediaModel(deps, body.model, 'AUDIO', AUDIO_ROUTE);
      const music = isMusic(model.features);
      if (music) {
        if (body.voice !== undefined)
          throw badRequest(`The music model "${model.slug}" takes no voice.`, [{ field: 'voice', message: 'not taken by music models' }]);
        if (body.durationSeconds !== undefined)
          throw badRequest(`The music model "${model.slug}" decides the length of the track; remove durationSeconds.`, [
            { field: 'durationSeconds', message: 'not taken by music models' },
          ]);
        if (body.speed !== undefined)
          throw badRequest(`The music model "${model.slug}" takes no speed.`, [{ field: 'speed', message: 'not taken by music models' }]);
        if (body.description === undefined)
          throw badRequest('Describe the track in description (genre, instruments, tempo).', [
            { field: 'description', message: 'is required for music models' },
          ]);
        if (body.text !== undefined)
          throw badRequest('Music models take a description, not text.', [{ field: 'text', message: 'use description for music models' }]);
      } else {
        if (body.text === undefined) throw badRequest('Give the words to say in text.', [{ field: 'text', message: 'is required for speech models' }]);
        if (body.description !== undefined)
          throw badRequest('Speech models read text; description is for music models.', [{ field: 'description', message: 'use text for speech models' }]);
        if (body.durationSeconds !== undefined)
          throw badRequest('Speech lasts as long as its text; remove durationSeconds.', [{ field: 'durationSeconds', message: 'not taken by speech models' }]);
        if (body.voice !== undefined) checkControl(model, 'voice', body.voice);
        if (body.speed !== undefined) checkControl(model, 'speed', body.speed);
      }
      const prices = body.extra ? checkExtra(model, adapter.extraKeys?.[music ? 'music' : 'speech'], body.extra) : null;
      const generateSpeech = music ? null : requireCapability(adapter, 'generateSpeech', model, 'speak');
      const generateMusic = music ? requireCapability(adapter, 'generateMusic', model, 'make music') : null;
      const access = await checkAccess(deps, principal, model);

      const characters = music ? null : [...body.text!].length;
      const estimate = music ? ({ kind: 'music' } as const) : ({ kind: 'speech', characters: characters! } as const);
      const reserved = await catalog.estimateTokens(model, estimate, prices ?? undefined);
      const { requestId } = request;
      const operation = music ? 'audio.music' : 'audio.speech';
      const reserving = performance.now();
      timing?.add('route', reserving - started);
      const span = startCallSpan({ operation: 'generate_content', providerSlug: model.providerSlug, model: model.slug, requestId });
      const metered = await deps.metering
        .reserve(principal, { model, operation, tokens: reserved, requestId, started, key: request.key }, { access })
        .catch((err: unknown) => {
          span.failed(err);
          throw err;
        });
      const calling = performance.now();
      timing?.add('reserve', calling - reserving);

      let result: { value: AudioResult; accountId: string };
      let price: Awaited<ReturnType<typeof catalog.priceUsage>>;
      let kept: { url: string; mimeType: string };
      try {
        result = await span.run(() =>
          pool.run(model.providerSlug, (_text, credential) =>
            music
              ? generateMusic!(credential, { model: model.upstreamModel, description: body.description!, seed: body.seed ?? null, extra: body.extra })
              : generateSpeech!(credential, {
                  model: model.upstreamModel,
                  text: body.text!,
                  voice: body.voice ?? null,
                  speed: body.speed ?? null,
                  extra: body.extra,
                }),
          ),
        );
        timing?.add('upstream', performance.now() - calling);
        price = await catalog.priceUsage(model, music ? { generations: 1 } : { characters: characters! }, prices ?? undefined);
        // What the answer costs is on the reservation before the file is stored: a crash meanwhile is charged, not refunded.
        await deps.metering.answered(metered, price.tokens);
        kept = await keepOutput(
          deps,
          principal.userId,
          { kind: 'bytes', bytes: result.value.bytes, mimeType: result.value.mimeType },
          'AUDIO',
          music ? 'audio/mpeg' : 'audio/wav',
        );
      } catch (err) {
        const error = asAppError(err, model.slug);
        span.failed(error);
        await db
          .transaction((tx) =>
            refundFailed(deps, tx, {
              userId: principal.userId,
              subscriptionId: access.subscriptionId,
              model,
              requestId,
              operation,
              error,
              latencyMs: performance.now() - started,
            }),
          )
          .catch((releaseError: unknown) => logger.error({ err: releaseError, requestId }, 'refunding a failed audio call failed'));
        throw error;
      }
      const seconds = result.value.durationSeconds;
      const settling = performance.now();
      const settled = await settleDeliveredNow(deps, {
        key: request.key,
        userId: principal.userId,
        subscriptionId: access.subscriptionId,
        model,
        requestId,
        operation,
        status: 'SUCCESS',
        chargeTokens: price.tokens,
        providerCostCents: price.providerCostCents,
        inputUnits: characters ?? 0,
        outputUnits: seconds === null ? 0 : Math.round(seconds),
        latencyMs: performance.now() - started,
        accountId: result.accountId,
        metadata: { reservedTokens: reserved, ...(body.voice ? { voice: body.voice } : {}), ...(principal.apiKeyId ? { apiKeyId: principal.apiKeyId } : {}) },
        generation: {
          kind: 'AUDIO',
          prompt: music ? body.description! : body.text!,
          output: { audio: { url: kept.url, mimeType: kept.mimeType, durationSeconds: seconds } },
          tags: [music ? 'music' : 'speech'],
        },
      });
      timing?.add('settle', performance.now() - settling);
      span.answered({ responseModel: model.upstreamModel, chargedTokens: settled.chargedTokens, attributes: { 'storefront.audio_seconds': seconds ?? 0 } });
      return {
        audio: { url: kept.url, mimeType: kept.mimeType, durationSeconds: seconds },
        usage: { characters, durationSeconds: seconds, creditsConsumed: settled.chargedTokens },
        model: model.slug,
        requestId,
      };
    },
  };
}
