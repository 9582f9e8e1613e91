import { generateSpeechWav } from '../../../../platform/media/speech.js';
import { silentMp3 } from '../../../../../test/helpers/fakes/media-bytes.js';
import { send, sendBytes, startFake, type MediaFake } from '../../../../../test/helpers/fakes/media-server.js';

/**
 * ElevenLabs' API: `POST /v1/text-to-speech/:voice_id` (raw PCM or MP3 by `output_format`), `POST /v1/music` (MP3),
 * `GET /v1/models`. By default it behaves like the real API; `decide` overrides one request (an error, a hang).
 */

export const ELEVENLABS_VOICES = ['21m00Tcm4TlvDq8ikWAM', 'EXAVITQu4vr4xnSDLpfL'];
const ELEVENLABS_SPEECH_MODELS = ['eleven_multilingual_v2', 'eleven_flash_v2_5', 'eleven_turbo_v2_5', 'eleven_v3'];
const ELEVENLABS_FORMATS = ['mp3_44100_128', 'mp3_22050_32', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100'];

export async function startFakeElevenLabs(): Promise<MediaFake> {
  return startFake('', async (_req, res, request) => {
    const key = request.headers['xi-api-key'];
    if (typeof key !== 'string' || !key.startsWith('sk_')) return send(res, 401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    if (request.method === 'GET' && request.path === '/v1/models') {
      return send(
        res,
        200,
        ELEVENLABS_SPEECH_MODELS.map((model_id) => ({ model_id, name: model_id, can_do_text_to_speech: true })),
      );
    }
    const format = request.query.get('output_format') ?? 'mp3_44100_128';
    if (!ELEVENLABS_FORMATS.includes(format)) {
      return send(res, 422, { detail: [{ type: 'enum', loc: ['query', 'output_format'], msg: `Input should be ${ELEVENLABS_FORMATS.join(', ')}` }] });
    }
    const speech = /^\/v1\/text-to-speech\/([^/]+)$/.exec(request.path);
    if (request.method === 'POST' && speech) {
      const voice = decodeURIComponent(speech[1]!);
      if (!ELEVENLABS_VOICES.includes(voice))
        return send(res, 404, { detail: { status: 'voice_not_found', message: `A voice with the voice_id ${voice} was not found.` } });
      const body = request.body ?? {};
      if (typeof body.text !== 'string' || !body.text) return send(res, 422, { detail: [{ type: 'missing', loc: ['body', 'text'], msg: 'Field required' }] });
      if (body.model_id && !ELEVENLABS_SPEECH_MODELS.includes(body.model_id)) {
        return send(res, 400, { detail: { status: 'model_not_found', message: `A model with model ID ${body.model_id} does not exist.` } });
      }
      if (format.startsWith('mp3')) return sendBytes(res, silentMp3(), 'audio/mpeg');
      const rate = Number(format.slice(4));
      const wav = generateSpeechWav({ text: body.text, seed: 3, voice });
      // The fake speaks at 24 kHz; it answers only the rate it really has.
      if (rate !== 24_000) return send(res, 400, { detail: { status: 'invalid_output_format', message: 'This fake only renders pcm_24000.' } });
      return sendBytes(res, wav.subarray(44), 'audio/pcm');
    }
    if (request.method === 'POST' && request.path === '/v1/music') {
      const body = request.body ?? {};
      if (typeof body.prompt !== 'string' || !body.prompt)
        return send(res, 422, { detail: [{ type: 'missing', loc: ['body', 'prompt'], msg: 'Field required' }] });
      if (body.model_id !== undefined && body.model_id !== 'music_v1')
        return send(res, 422, { detail: [{ type: 'literal_error', loc: ['body', 'model_id'], msg: "Input should be 'music_v1'" }] });
      if (!format.startsWith('mp3'))
        return send(res, 403, { detail: { status: 'output_format_not_allowed', message: 'PCM output requires the Pro tier or above.' } });
      return sendBytes(res, silentMp3(60), 'audio/mpeg');
    }
    return send(res, 404, { detail: 'Not Found' });
  });
}
