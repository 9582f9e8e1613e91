import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { generatePng } from './image.js';
import { findBoxes, parseBoxes, payloadOf, readMp4Info } from './mp4.js';
import { generateMusicWav, MUSIC_SAMPLE_RATE, planMusic } from './music.js';
import { crc32, encodePng } from './png.js';
import { describeScene, renderScene } from './scene.js';
import { baseContentType, formatMatches, sniffFormat } from './sniff.js';
import { generateSpeechWav, SPEECH_SAMPLE_RATE } from './speech.js';
import { generateMp4 } from './video.js';
import { encodeWav, readWavInfo } from './wav.js';

/** A minimal PNG reader written for the test: chunks, CRCs, IHDR and the unfiltered RGB pixels. */
function decodePng(file: Buffer) {
  expect([...file.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chunks: { type: string; data: Buffer }[] = [];
  let offset = 8;
  while (offset < file.length) {
    const length = file.readUInt32BE(offset);
    const type = file.toString('latin1', offset + 4, offset + 8);
    const data = file.subarray(offset + 8, offset + 8 + length);
    // Checked against zlib's own CRC-32, independent of the encoder's table.
    expect(file.readUInt32BE(offset + 8 + length)).toBe(zlib.crc32(file.subarray(offset + 4, offset + 8 + length)));
    chunks.push({ type, data });
    offset += 12 + length;
  }
  expect(chunks[0]!.type).toBe('IHDR');
  expect(chunks.at(-1)!.type).toBe('IEND');
  const ihdr = chunks[0]!.data;
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  expect([ihdr[8], ihdr[9], ihdr[10], ihdr[11], ihdr[12]]).toEqual([8, 2, 0, 0, 0]);
  const raw = zlib.inflateSync(Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data)));
  const stride = width * 3;
  expect(raw.length).toBe((stride + 1) * height);
  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    expect(filter).toBeLessThanOrEqual(4);
    for (let i = 0; i < stride; i++) {
      const x = raw[y * (stride + 1) + 1 + i]!;
      const a = i >= 3 ? pixels[y * stride + i - 3]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + i]! : 0;
      const c = y > 0 && i >= 3 ? pixels[(y - 1) * stride + i - 3]! : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter]!;
      pixels[y * stride + i] = (x + predictor) & 0xff;
    }
  }
  return { width, height, pixels, chunks };
}

describe('PNG encoder and generated images', () => {
  it('computes the standard CRC-32', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.from('IEND'))).toBe(0xae426082);
  });

  it('encodes exactly the given pixels, losslessly', () => {
    const pixels = new Uint8Array(5 * 3 * 3).map((_, i) => (i * 37) & 255);
    const decoded = decodePng(encodePng(5, 3, pixels));
    expect(decoded).toMatchObject({ width: 5, height: 3 });
    expect([...decoded.pixels]).toEqual([...pixels]);
  });

  it.each([
    [512, 512],
    [768, 432],
    [97, 203],
    [1, 1],
  ])('draws a real %ix%i PNG whose pixels are the rendered scene', (width, height) => {
    const png = generatePng({ prompt: 'a lighthouse on a cliff at dawn', seed: 11, width, height });
    const decoded = decodePng(png);
    expect(decoded.width).toBe(width);
    expect(decoded.height).toBe(height);
    const expected = new Uint8Array(width * height * 3);
    renderScene(describeScene('a lighthouse on a cliff at dawn', 11), width, height, 0, expected, 3);
    expect(Buffer.from(decoded.pixels).equals(Buffer.from(expected))).toBe(true);
  });

  it('draws a picture, not a flat colour', () => {
    const { pixels } = decodePng(generatePng({ prompt: 'mountains', seed: 1, width: 64, height: 64 }));
    const colours = new Set<number>();
    for (let i = 0; i < pixels.length; i += 3) colours.add((pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!);
    expect(colours.size).toBeGreaterThan(50);
  });

  it('is deterministic: the same prompt and seed give the same bytes; another seed or prompt does not', () => {
    const input = { prompt: 'a red fox in the snow', seed: 42, width: 160, height: 120 };
    const first = generatePng(input);
    expect(generatePng({ ...input }).equals(first)).toBe(true);
    expect(generatePng({ ...input, seed: 43 }).equals(first)).toBe(false);
    expect(generatePng({ ...input, prompt: 'a blue fox in the snow' }).equals(first)).toBe(false);
  });

  it.each([
    [0, 10],
    [10, 0],
    [5000, 10],
    [10.5, 10],
  ])('refuses the size %ix%i', (width, height) => {
    expect(() => generatePng({ prompt: 'x', seed: 1, width, height })).toThrow(RangeError);
  });
});

/** Root-mean-square level of consecutive windows of 16-bit mono PCM. */
function windowLevels(wav: Buffer, sampleRate: number, windowSeconds: number): number[] {
  const samples = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length));
  const size = Math.round(sampleRate * windowSeconds);
  const levels: number[] = [];
  for (let start = 0; start + size <= samples.length; start += size) {
    let sum = 0;
    for (let i = start; i < start + size; i++) sum += samples[i]! ** 2;
    levels.push(Math.sqrt(sum / size));
  }
  return levels;
}

describe('WAV encoder and generated audio', () => {
  it('writes a canonical PCM header', () => {
    const wav = encodeWav(new Int16Array([0, 1000, -1000, 32767]), 16000);
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.toString('latin1', 8, 16)).toBe('WAVEfmt ');
    expect(wav.readUInt16LE(20)).toBe(1);
    expect(readWavInfo(wav)).toEqual({ channels: 1, sampleRate: 16000, bitsPerSample: 16, dataBytes: 8, durationSeconds: 4 / 16000 });
    expect(wav.readInt16LE(44 + 6)).toBe(32767);
  });

  it('speaks at a syllable rate: duration follows the text, with quiet gaps between syllables', () => {
    const short = generateSpeechWav({ text: 'Hello there.', seed: 1 });
    const sentence = 'The quick brown fox jumps over the lazy dog, and then it runs away into the forest.';
    const long = generateSpeechWav({ text: sentence, seed: 1 });
    const shortInfo = readWavInfo(short);
    const longInfo = readWavInfo(long);
    expect(longInfo).toMatchObject({ channels: 1, sampleRate: SPEECH_SAMPLE_RATE, bitsPerSample: 16 });
    expect(longInfo.dataBytes).toBe(long.length - 44);
    // About 21 syllables at 4-6 a second plus pauses.
    expect(longInfo.durationSeconds).toBeGreaterThan(3);
    expect(longInfo.durationSeconds).toBeLessThan(9);
    expect(shortInfo.durationSeconds).toBeLessThan(longInfo.durationSeconds / 3);
    const levels = windowLevels(long, SPEECH_SAMPLE_RATE, 0.02);
    const loud = levels.filter((l) => l > 3000).length;
    const quiet = levels.filter((l) => l < 300).length;
    expect(loud).toBeGreaterThan(levels.length * 0.3);
    expect(quiet).toBeGreaterThan(levels.length * 0.1);
    // The level rises and falls many times: one swing per syllable or word.
    let swings = 0;
    for (let i = 1; i < levels.length; i++) if (levels[i - 1]! < 1000 && levels[i]! >= 1000) swings++;
    expect(swings).toBeGreaterThanOrEqual(10);
  });

  it('makes speech deterministically; seed and voice change it', () => {
    const input = { text: 'Testing one two three.', seed: 5 };
    const first = generateSpeechWav(input);
    expect(generateSpeechWav({ ...input }).equals(first)).toBe(true);
    expect(generateSpeechWav({ ...input, seed: 6 }).equals(first)).toBe(false);
    expect(generateSpeechWav({ ...input, voice: 'alto' }).equals(first)).toBe(false);
    expect(readWavInfo(generateSpeechWav({ ...input, speed: 2 })).durationSeconds).toBeLessThan(readWavInfo(first).durationSeconds);
  });

  it('gives empty text a short silence rather than failing', () => {
    const info = readWavInfo(generateSpeechWav({ text: '   ', seed: 1 }));
    expect(info.durationSeconds).toBeGreaterThan(0.3);
    expect(info.durationSeconds).toBeLessThan(1);
  });

  it('makes music whose length the generator decides (whole bars, 10-30 s) or that follows a requested length', () => {
    const decided = generateMusicWav({ prompt: 'upbeat synth pop with drums', seed: 3 });
    const info = readWavInfo(decided);
    const plan = planMusic({ prompt: 'upbeat synth pop with drums', seed: 3 });
    expect(info).toMatchObject({ channels: 1, sampleRate: MUSIC_SAMPLE_RATE, bitsPerSample: 16 });
    expect(info.durationSeconds).toBeCloseTo(plan.seconds + 0.5, 1);
    expect(plan.seconds).toBeGreaterThanOrEqual(8);
    expect(plan.seconds).toBeLessThanOrEqual(32);
    expect(plan.bpm).toBeGreaterThanOrEqual(118); // "upbeat" asks for a fast tempo
    expect(planMusic({ prompt: 'slow ambient piano', seed: 3 }).bpm).toBeLessThanOrEqual(88);
    expect(planMusic({ prompt: 'a sad dark melody', seed: 3 }).minor).toBe(true);
    const requested = readWavInfo(generateMusicWav({ prompt: 'calm guitar', seed: 1, durationSeconds: 6 }));
    expect(Math.abs(requested.durationSeconds - 6.5)).toBeLessThan(2);
    const levels = windowLevels(decided, MUSIC_SAMPLE_RATE, 0.05);
    expect(levels.filter((l) => l > 1000).length).toBeGreaterThan(levels.length * 0.8);
  });

  it('makes music deterministically; a different seed gives a different track', () => {
    const input = { prompt: 'jazz trio', seed: 9, durationSeconds: 4 };
    const first = generateMusicWav(input);
    expect(generateMusicWav({ ...input }).equals(first)).toBe(true);
    expect(generateMusicWav({ ...input, seed: 10 }).equals(first)).toBe(false);
  });
});

const run = promisify(execFile);
// Taken before this file loads the video encoder, whose glue code installs process-wide handlers.
const processHandlersBefore = () => [process.listenerCount('uncaughtException'), process.listenerCount('unhandledRejection')];
const handlersAtStart = processHandlersBefore();
const ffprobeAvailable = await run('ffprobe', ['-version']).then(
  () => true,
  () => false,
);

describe('generated video', () => {
  it('is an H.264 MP4 laid out for streaming, of the requested size, length and frame count', async () => {
    const video = await generateMp4({ prompt: 'waves rolling on a beach', seed: 3, width: 192, height: 108, durationSeconds: 2, fps: 12 });
    const info = readMp4Info(video);
    expect(info).toEqual({
      brands: expect.arrayContaining(['isom']),
      durationSeconds: 2,
      width: 192,
      height: 108,
      codec: 'avc1',
      avcProfile: 66, // Baseline: plays in every browser
      sampleCount: 24,
      moovBeforeMdat: true,
    });
    // Every chunk offset points inside mdat, and the first sample starts with a length-prefixed NAL unit.
    const boxes = parseBoxes(video);
    const mdat = boxes.find((b) => b.type === 'mdat')!;
    const stco = payloadOf(video, findBoxes(boxes, 'stco')[0]!);
    const offsets = Array.from({ length: stco.readUInt32BE(4) }, (_, i) => stco.readUInt32BE(8 + i * 4));
    expect(offsets.length).toBeGreaterThan(0);
    for (const offset of offsets) {
      expect(offset).toBeGreaterThanOrEqual(mdat.start + mdat.headerSize);
      expect(offset).toBeLessThan(mdat.start + mdat.size);
    }
    const firstNal = video.readUInt32BE(offsets[0]);
    expect(firstNal).toBeGreaterThan(0);
    expect(firstNal).toBeLessThan(mdat.size);
    expect(video[offsets[0]! + 4]! & 0x1f).toBeOneOf([1, 5, 6, 7, 8, 9]); // a real H.264 NAL unit type

    if (ffprobeAvailable) {
      // Where FFmpeg is installed, it decodes every frame too.
      const dir = await mkdtemp(path.join(os.tmpdir(), 'video-test-'));
      try {
        const file = path.join(dir, 'v.mp4');
        await writeFile(file, video);
        const { stdout } = await run('ffprobe', [
          '-v',
          'error',
          '-count_frames',
          '-show_entries',
          'stream=codec_name,profile,width,height,pix_fmt,nb_read_frames',
          '-of',
          'json',
          file,
        ]);
        expect(JSON.parse(stdout).streams[0]).toEqual({
          codec_name: 'h264',
          profile: 'Baseline',
          width: 192,
          height: 108,
          pix_fmt: 'yuv420p',
          nb_read_frames: '24',
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });

  it('leaves the process-wide error handlers as they were after loading the WebAssembly encoder', async () => {
    await generateMp4({ prompt: 'x', seed: 1, width: 32, height: 32, durationSeconds: 1, fps: 2 });
    expect(processHandlersBefore()).toEqual(handlersAtStart);
  });

  it('is deterministic; another seed gives another video; odd sizes round down to even', async () => {
    const input = { prompt: 'a paper boat', seed: 1, width: 96, height: 64, durationSeconds: 1, fps: 8 };
    const first = await generateMp4(input);
    expect((await generateMp4({ ...input })).equals(first)).toBe(true);
    expect((await generateMp4({ ...input, seed: 2 })).equals(first)).toBe(false);
    expect(readMp4Info(await generateMp4({ ...input, width: 97, height: 65 }))).toMatchObject({ width: 96, height: 64 });
  });

  it.each([[{ width: 8, height: 64 }], [{ width: 4000, height: 64 }], [{ durationSeconds: 0 }], [{ durationSeconds: 60 }], [{ fps: 0 }], [{ fps: 2.5 }]])(
    'refuses out-of-range input %j',
    async (override) => {
      await expect(generateMp4({ prompt: 'x', seed: 1, width: 64, height: 64, durationSeconds: 1, fps: 8, ...override })).rejects.toThrow(RangeError);
    },
  );
});

describe('media sniffing', () => {
  const png = generatePng({ prompt: 'x', seed: 1, width: 2, height: 2 });
  const wav = encodeWav(new Int16Array(4), 8000);
  it.each<[string, Buffer, string | null]>([
    ['png', png, 'png'],
    ['jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46]), 'jpeg'],
    ['gif', Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'), 'gif'],
    ['webp', Buffer.from('RIFF\x24\x00\x00\x00WEBPVP8 ', 'latin1'), 'webp'],
    ['wav', wav, 'wav'],
    ['ogg', Buffer.from('OggS\x00\x02', 'latin1'), 'ogg'],
    ['flac', Buffer.from('fLaC\x00\x00', 'latin1'), 'flac'],
    ['mp3 with ID3', Buffer.from('ID3\x04\x00', 'latin1'), 'mp3'],
    ['mp3 frame', Buffer.from([0xff, 0xfb, 0x90, 0x64]), 'mp3'],
    ['aac adts', Buffer.from([0xff, 0xf1, 0x50, 0x80]), 'aac'],
    ['mp4', Buffer.from('\x00\x00\x00\x18ftypisom\x00\x00\x02\x00', 'latin1'), 'mp4'],
    ['quicktime', Buffer.from('\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00', 'latin1'), 'quicktime'],
    ['webm', Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84, ...Buffer.from('webm')]), 'webm'],
    ['matroska (not webm)', Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x88, ...Buffer.from('matroska')]), null],
    ['html', Buffer.from('<!doctype html><script>alert(1)</script>'), null],
    ['svg', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), null],
    ['empty', Buffer.alloc(0), null],
  ])('recognises %s', (_label, bytes, format) => {
    expect(sniffFormat(bytes)).toBe(format);
  });

  it('matches declared content types, aliases included', () => {
    expect(formatMatches('image/png', 'png')).toBe(true);
    expect(formatMatches('Image/JPG; charset=binary', 'jpeg')).toBe(true);
    expect(formatMatches('audio/x-wav', 'wav')).toBe(true);
    expect(formatMatches('image/png', 'jpeg')).toBe(false);
    expect(formatMatches('text/html', 'png')).toBe(false);
    expect(baseContentType(' Video/MP4 ; codecs="avc1"')).toBe('video/mp4');
  });
});
