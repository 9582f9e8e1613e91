import { UpstreamError, classifyStatus, type UpstreamCredential } from '../types.js';
import { pcm16ToWav, wavDurationSeconds } from '../media/audio.js';
import { mediaTypeOf } from '../media/download.js';
import { callUpstream, jsonOf, mergeExtra, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { ExtraKeys, MediaAdapter } from '../media/media-types.js';

/**
 * ElevenLabs (https://elevenlabs.io/docs/api-reference): text to speech with `POST /v1/text-to-speech/{voice_id}`
 * and music with `POST /v1/music`, both answering audio bytes, keyed with the `xi-api-key` header. Speech is asked for
 * as raw 24 kHz 16-bit PCM (`output_format=pcm_24000`, available on every plan) and wrapped into WAV here; music comes
 * as MP3 (`mp3_44100_128`), the format every music plan can use; the model decides the track length.
 */
export const ELEVENLABS_DEFAULT_BASE_URL = 'https://api.elevenlabs.io';
/** "Rachel", ElevenLabs' long-standing default premade voice. */
export const ELEVENLABS_DEFAULT_VOICE = '21m00Tcm4TlvDq8ikWAM';
export const ELEVENLABS_SPEECH_SAMPLE_RATE = 24_000;
const SPEECH_FORMAT = `pcm_${ELEVENLABS_SPEECH_SAMPLE_RATE}`;
const MUSIC_FORMAT = 'mp3_44100_128';

/** Voice settings ElevenLabs takes under `voice_settings` (sent when given in `extra`). */
const VOICE_SETTINGS = ['stability', 'similarity_boost', 'style', 'use_speaker_boost', 'speed'] as const;

/** The `extra` keys of speech (voice settings; `speed` is the request's own field). Music takes none. */
export const ELEVENLABS_SPEECH_EXTRA: ExtraKeys = {
  stability: { type: 'number', min: 0, max: 1 },
  similarity_boost: { type: 'number', min: 0, max: 1 },
  style: { type: 'number', min: 0, max: 1 },
  use_speaker_boost: { type: 'boolean' },
};

/**
 * ElevenLabs errors are `{ "detail": { "status" | "code", "message", ... } }`, a validation list
 * `{ "detail": [{ "msg", "loc" }] }` (422), or a plain `{ "detail": "..." }`.
 */
function errorOf(response: UpstreamResponse): { code: string | null; message: string | null } {
  const detail = (jsonOf(response) as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return { code: null, message: detail };
  if (Array.isArray(detail)) {
    const messages = detail.map((d: { msg?: unknown; loc?: unknown }) =>
      [Array.isArray(d.loc) ? d.loc.join('.') : '', typeof d.msg === 'string' ? d.msg : ''].filter(Boolean).join(': '),
    );
    return { code: 'validation_error', message: messages.filter(Boolean).join('; ') || null };
  }
  if (detail && typeof detail === 'object') {
    const d = detail as { status?: unknown; code?: unknown; message?: unknown };
    const code = typeof d.code === 'string' ? d.code : typeof d.status === 'string' ? d.status : null;
    return { code, message: typeof d.message === 'string' ? d.message : null };
  }
  return { code: null, message: null };
}

/** What the error means for the pool: a used-up quota is the account's problem; an unknown voice is the caller's. */
function elevenLabsError(response: UpstreamResponse, model: string): UpstreamError {
  const { code, message: found } = errorOf(response);
  const message = found?.trim() || `The provider answered HTTP ${response.status}.`;
  const kind =
    code === 'quota_exceeded' || code === 'payment_required' || code === 'insufficient_credits'
      ? 'rate_limit'
      : code === 'voice_not_found' || code === 'text_too_long' || code === 'max_character_limit_exceeded' || code === 'validation_error'
        ? 'bad_request'
        : classifyStatus(response.status, code, message, model);
  return new UpstreamError(kind, message, response.status, code ?? `http_${response.status}`);
}

export function createElevenLabsAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? ELEVENLABS_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;
  const headers = (credential: UpstreamCredential, accept: string) => ({ 'xi-api-key': credential.apiKey ?? '', accept });

  return {
    kind: 'elevenlabs',
    needsCredential: true,
    extraKeys: { speech: ELEVENLABS_SPEECH_EXTRA },

    async generateSpeech(credential, request) {
      const voice = request.voice?.trim() || ELEVENLABS_DEFAULT_VOICE;
      const extra = { ...request.extra };
      const settings: Record<string, unknown> = {};
      for (const key of VOICE_SETTINGS) {
        if (extra[key] !== undefined) settings[key] = extra[key];
        delete extra[key];
      }
      if (request.speed !== undefined && request.speed !== null) settings.speed = request.speed;
      const body = mergeExtra(extra, { text: request.text, model_id: request.model, voice_settings: Object.keys(settings).length > 0 ? settings : undefined });
      const response = await callUpstream(http, urlOf(credential, `/v1/text-to-speech/${encodeURIComponent(voice)}?output_format=${SPEECH_FORMAT}`), {
        method: 'POST',
        headers: headers(credential, 'audio/*, application/octet-stream'),
        body,
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (response.status < 200 || response.status >= 300) throw elevenLabsError(response, request.model);
      if (response.body.length < 2) throw new UpstreamError('server', 'The provider returned no audio.', response.status, 'empty_response');
      // Raw PCM has no header, so only unambiguous containers are recognised: a WAV is passed on as it is, while
      // compressed audio (the server ignored output_format) is refused, since speech is always delivered as WAV.
      if (wavDurationSeconds(response.body) !== null)
        return { bytes: response.body, mimeType: 'audio/wav', durationSeconds: wavDurationSeconds(response.body) };
      const declared = (response.headers.get('content-type') ?? '').toLowerCase();
      if (response.body.subarray(0, 3).toString('latin1') === 'ID3' || /mpeg|mp3|ogg|opus|aac/.test(declared)) {
        throw new UpstreamError(
          'server',
          `The provider returned compressed audio (${declared || 'MP3'}) instead of raw PCM speech.`,
          response.status,
          'unexpected_format',
        );
      }
      const bytes = pcm16ToWav(response.body, ELEVENLABS_SPEECH_SAMPLE_RATE);
      return { bytes, mimeType: 'audio/wav', durationSeconds: wavDurationSeconds(bytes) };
    },

    async generateMusic(credential, request) {
      const body = mergeExtra(request.extra, { prompt: request.description, model_id: request.model, seed: request.seed ?? undefined });
      const response = await callUpstream(http, urlOf(credential, `/v1/music?output_format=${MUSIC_FORMAT}`), {
        method: 'POST',
        headers: headers(credential, 'audio/*, application/octet-stream'),
        body,
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (response.status < 200 || response.status >= 300) throw elevenLabsError(response, request.model);
      if (response.body.length === 0) throw new UpstreamError('server', 'The provider returned no audio.', response.status, 'empty_response');
      const mimeType = mediaTypeOf(response.body, response.headers.get('content-type'), 'audio/mpeg');
      return { bytes: response.body, mimeType, durationSeconds: mimeType === 'audio/wav' ? wavDurationSeconds(response.body) : null };
    },

    async checkCredential(credential) {
      const response = await callUpstream(http, urlOf(credential, '/v1/models'), {
        method: 'GET',
        headers: headers(credential, 'application/json'),
        timeoutMs: credential.timeoutMs,
      });
      if (response.status < 200 || response.status >= 300) throw elevenLabsError(response, '');
    },
  };
}
