import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentMp3, startFakeElevenLabs, type MediaFake } from '../../../../../test/helpers/fake-media-upstreams.js';
import { sniffFormat } from '../../../../platform/media/sniff.js';
import { readWavInfo } from '../../../../platform/media/wav.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { ELEVENLABS_DEFAULT_VOICE, createElevenLabsAdapter } from './media.js';
import type { MediaAdapter, SpeechRequest } from '../media/media-types.js';

let fake: MediaFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeElevenLabs();
  adapter = createElevenLabsAdapter();
  credential = { accountId: 'acc-el-1', providerSlug: 'elevenlabs', apiKey: 'sk_test_1', baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => fake.decide(() => ({ kind: 'default' })));
afterAll(async () => fake?.close());

const speech = (overrides: Partial<SpeechRequest> = {}): SpeechRequest => ({
  model: 'eleven_multilingual_v2',
  text: 'The quick brown fox jumps over the lazy dog.',
  voice: 'EXAVITQu4vr4xnSDLpfL',
  ...overrides,
});
const last = () => fake.requests.at(-1)!;

async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('ElevenLabs text to speech', () => {
  it('asks for 24 kHz PCM with the key and wraps it into a WAV of the right length', async () => {
    const result = await adapter.generateSpeech!(
      credential,
      speech({ extra: { stability: 0.3, similarity_boost: 0.8, language_code: 'en', text: 'ignored' }, speed: 1.1 }),
    );
    const call = last();
    expect(call).toMatchObject({ method: 'POST', path: '/v1/text-to-speech/EXAVITQu4vr4xnSDLpfL' });
    expect(call.query.get('output_format')).toBe('pcm_24000');
    expect(call.headers['xi-api-key']).toBe('sk_test_1');
    expect(call.body).toEqual({
      language_code: 'en',
      text: 'The quick brown fox jumps over the lazy dog.',
      model_id: 'eleven_multilingual_v2',
      voice_settings: { stability: 0.3, similarity_boost: 0.8, speed: 1.1 },
    });
    expect(result.mimeType).toBe('audio/wav');
    const info = readWavInfo(result.bytes);
    expect(info).toMatchObject({ channels: 1, sampleRate: 24_000, bitsPerSample: 16, dataBytes: result.bytes.length - 44 });
    expect(result.durationSeconds).toBeCloseTo(info.durationSeconds, 6);
    expect(result.durationSeconds!).toBeGreaterThan(1);
  });

  it('uses the default voice when none is given and sends no voice settings', async () => {
    await adapter.generateSpeech!(credential, speech({ voice: null }));
    expect(last().path).toBe(`/v1/text-to-speech/${ELEVENLABS_DEFAULT_VOICE}`);
    expect(last().body.voice_settings).toBeUndefined();
  });

  it('passes a WAV answer on, and refuses compressed or empty audio (speech is always WAV)', async () => {
    const wav = await adapter.generateSpeech!(credential, speech());
    fake.decide(() => ({ kind: 'raw', status: 200, contentType: 'audio/wav', body: wav.bytes }));
    const passed = await adapter.generateSpeech!(credential, speech());
    expect(passed.bytes.equals(wav.bytes)).toBe(true);
    expect(passed.durationSeconds).toBeCloseTo(wav.durationSeconds!, 6);

    fake.decide(() => ({ kind: 'raw', status: 200, contentType: 'audio/mpeg', body: silentMp3() }));
    expect(await upstreamError(adapter.generateSpeech!(credential, speech()))).toMatchObject({ kind: 'server', code: 'unexpected_format' });
    fake.decide(() => ({ kind: 'raw', status: 200, contentType: 'application/octet-stream', body: silentMp3() }));
    expect(await upstreamError(adapter.generateSpeech!(credential, speech()))).toMatchObject({ kind: 'server', code: 'unexpected_format' });
    fake.decide(() => ({ kind: 'raw', status: 200, contentType: 'audio/pcm', body: Buffer.alloc(0) }));
    expect(await upstreamError(adapter.generateSpeech!(credential, speech()))).toMatchObject({ kind: 'server', code: 'empty_response' });
  });

  it('keeps raw PCM that happens to start like an MP3 frame (a small negative first sample)', async () => {
    const pcm = Buffer.alloc(4800);
    pcm.writeInt16LE(-1, 0);
    fake.decide(() => ({ kind: 'raw', status: 200, contentType: 'audio/pcm', body: pcm }));
    const result = await adapter.generateSpeech!(credential, speech());
    expect(result.mimeType).toBe('audio/wav');
    expect(result.durationSeconds).toBeCloseTo(0.1, 6);
  });

  it('answers an unknown voice as a bad request (not an account failure)', async () => {
    const error = await upstreamError(adapter.generateSpeech!(credential, speech({ voice: 'no-such-voice' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 404, code: 'voice_not_found' });
    expect(error.message).toContain('no-such-voice');
  });

  it('answers a validation error as a bad request with the fields named', async () => {
    const error = await upstreamError(adapter.generateSpeech!(credential, speech({ text: '' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 422, code: 'validation_error' });
    expect(error.message).toContain('body.text');
  });

  it.each([
    [401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } }, 'auth', 'invalid_api_key'],
    [
      401,
      { detail: { status: 'quota_exceeded', message: 'This request exceeds your quota of 10000. You have 12 credits remaining.' } },
      'rate_limit',
      'quota_exceeded',
    ],
    [
      403,
      { detail: { status: 'model_access_denied', message: 'Your subscription does not include the model eleven_v3.' } },
      'model_refused',
      'model_access_denied',
    ],
    [
      429,
      { detail: { type: 'rate_limit_error', code: 'concurrent_limit_exceeded', message: 'Too many concurrent requests.', request_id: 'r1' } },
      'rate_limit',
      'concurrent_limit_exceeded',
    ],
    [500, { detail: 'Internal Server Error' }, 'server', 'http_500'],
    [503, { detail: { status: 'system_busy', message: 'We are experiencing heavy traffic.' } }, 'server', 'system_busy'],
  ] as const)('classifies HTTP %i (%j) as %s', async (status, body, kind, code) => {
    fake.decide(() => ({ kind: 'error', status, body }));
    const error = await upstreamError(adapter.generateSpeech!(credential, speech()));
    expect(error).toMatchObject({ kind, status, code });
    expect(error.message.length).toBeGreaterThan(5);
  });

  it('rejects a wrong key through the real check', async () => {
    expect(await upstreamError(adapter.generateSpeech!({ ...credential, apiKey: 'wrong' }, speech()))).toMatchObject({ kind: 'auth', status: 401 });
  });
});

describe('ElevenLabs music', () => {
  it('composes from a description as MP3; the model decides the length', async () => {
    const result = await adapter.generateMusic!(credential, {
      model: 'music_v1',
      description: 'Upbeat synthwave with a driving bassline',
      seed: 4,
      extra: { force_instrumental: true },
    });
    expect(last()).toMatchObject({ method: 'POST', path: '/v1/music' });
    expect(last().query.get('output_format')).toBe('mp3_44100_128');
    expect(last().body).toEqual({ force_instrumental: true, prompt: 'Upbeat synthwave with a driving bassline', model_id: 'music_v1', seed: 4 });
    expect(result).toMatchObject({ mimeType: 'audio/mpeg', durationSeconds: null });
    expect(sniffFormat(result.bytes)).toBe('mp3');
  });

  it('maps music errors like speech errors', async () => {
    const invalid = await upstreamError(adapter.generateMusic!(credential, { model: 'music_v9', description: 'jazz' }));
    expect(invalid).toMatchObject({ kind: 'bad_request', status: 422 });
    fake.decide(() => ({ kind: 'error', status: 402, body: { detail: { status: 'payment_required', message: 'Music requires a paid plan.' } } }));
    expect(await upstreamError(adapter.generateMusic!(credential, { model: 'music_v1', description: 'jazz' }))).toMatchObject({
      kind: 'rate_limit',
      status: 402,
    });
  });

  it('times out and reports unreachable upstreams', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.generateMusic!({ ...credential, timeoutMs: 150 }, { model: 'music_v1', description: 'jazz' }))).toMatchObject({
      kind: 'timeout',
    });
    expect(await upstreamError(adapter.generateSpeech!({ ...credential, baseUrl: 'http://127.0.0.1:1' }, speech()))).toMatchObject({ kind: 'network' });
  });
});

describe('ElevenLabs credential check', () => {
  it('lists models with the key', async () => {
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: 'nope' }))).toMatchObject({ kind: 'auth' });
  });
});
