import { seededRandom, type SeededRandom } from './random.js';
import { encodeWav, toPcm16 } from './wav.js';

export const SPEECH_SAMPLE_RATE = 24_000;
/** Longest speech the local generator produces; longer text is cut at a word boundary. */
export const MAX_SPEECH_SECONDS = 600;

export interface SpeechInput {
  text: string;
  seed: number;
  /** A voice name; each name gets its own pitch and timbre. */
  voice?: string;
  /** Speaking rate, 0.5-2 (default 1). */
  speed?: number;
}

/** Vowel formants (F1, F2, F3 in Hz) of an average adult voice. */
const FORMANTS: Record<string, [number, number, number]> = {
  a: [730, 1090, 2440],
  e: [530, 1840, 2480],
  i: [270, 2290, 3010],
  o: [570, 840, 2410],
  u: [300, 870, 2240],
  y: [400, 1900, 2500],
};
const FRICATIVES = new Set(['s', 'f', 'h', 'z', 'v', 'c', 'x', 'j', 'ʃ']);
const PLOSIVES = new Set(['p', 't', 'k', 'b', 'd', 'g', 'q']);

interface Segment {
  kind: 'syllable' | 'pause';
  seconds: number;
  vowel?: [number, number, number];
  onset?: 'fricative' | 'plosive' | 'voiced';
  pitch?: number;
  loudness?: number;
}

const baseLetter = (ch: string) => ch.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

/** Splits text into timed syllables and pauses: the rhythm of speech, derived from the text itself. */
function plan(text: string, random: SeededRandom, basePitch: number, speed: number): Segment[] {
  const tokens = text.match(/[\p{L}\p{N}']+|[.,!?;:]/gu) ?? [];
  const segments: Segment[] = [];
  let total = 0;
  // Phrases run between punctuation marks; pitch falls through a phrase and rises at a question mark.
  let phrase: Segment[] = [];
  const closePhrase = (mark: string | null) => {
    phrase.forEach((segment, i) => {
      const progress = phrase.length > 1 ? i / (phrase.length - 1) : 0;
      let contour = 1.15 - 0.25 * progress;
      if (mark === '?' && i >= phrase.length - 2) contour = 1.1 + 0.25 * (i - (phrase.length - 2));
      segment.pitch = basePitch * contour * random.range(0.96, 1.04);
    });
    phrase = [];
  };
  for (const token of tokens) {
    if (total >= MAX_SPEECH_SECONDS) break;
    if (/^[.,!?;:]$/.test(token)) {
      closePhrase(token);
      const seconds = (token === ',' ? random.range(0.2, 0.3) : random.range(0.4, 0.55)) / speed;
      segments.push({ kind: 'pause', seconds });
      total += seconds;
      continue;
    }
    const letters = [...token].map(baseLetter).join('');
    const groups = /\p{N}/u.test(letters) ? letters.split('').map(() => 'a') : (letters.match(/[aeiouy]+/g) ?? ['a']);
    const onsets = letters.split(/[aeiouy]+/);
    groups.slice(0, 8).forEach((group, i) => {
      const before = onsets[i]?.slice(-1) ?? '';
      const syllable: Segment = {
        kind: 'syllable',
        seconds: random.range(0.15, 0.24) / speed,
        vowel: FORMANTS[group[0]!] ?? FORMANTS.a!,
        onset: FRICATIVES.has(before) ? 'fricative' : PLOSIVES.has(before) ? 'plosive' : 'voiced',
        loudness: i === 0 ? random.range(0.85, 1) : random.range(0.6, 0.85),
      };
      segments.push(syllable);
      phrase.push(syllable);
      total += syllable.seconds;
    });
    const gap = random.range(0.04, 0.1) / speed;
    segments.push({ kind: 'pause', seconds: gap });
    total += gap;
  }
  closePhrase(null);
  if (segments.every((s) => s.kind === 'pause')) segments.push({ kind: 'pause', seconds: 0.5 });
  return segments;
}

/** Length in seconds of the speech `generateSpeechWav` makes for this input. */
export function speechDurationSeconds(input: SpeechInput): number {
  const samples = speechSamples(input).length;
  return samples / SPEECH_SAMPLE_RATE;
}

function speechSamples({ text, seed, voice = 'default', speed = 1 }: SpeechInput): Float32Array {
  if (!(speed >= 0.5 && speed <= 2)) throw new RangeError(`speed must be 0.5-2 (got ${speed})`);
  const voiceRandom = seededRandom('voice', voice);
  const basePitch = voiceRandom.range(95, 230);
  const brightness = voiceRandom.range(0.9, 1.15); // formant scaling: a smaller or larger vocal tract
  const random = seededRandom('speech', text, seed, voice);
  const segments = plan(text, random, basePitch, speed);
  const rate = SPEECH_SAMPLE_RATE;
  const counts = segments.map((s) => Math.max(1, Math.round(s.seconds * rate)));
  const out = new Float32Array(counts.reduce((a, b) => a + b, 0) + Math.round(0.15 * rate));
  let offset = Math.round(0.05 * rate); // a breath of silence before the first word
  let phase = 0;
  let lowpass = 0;
  segments.forEach((segment, index) => {
    const length = counts[index]!;
    if (segment.kind === 'pause' || offset + length > out.length) {
      offset += length;
      return;
    }
    const pitch = segment.pitch ?? basePitch;
    const [f1, f2, f3] = segment.vowel!.map((f) => f * brightness) as [number, number, number];
    // Harmonic amplitudes shaped by the three formant resonances, computed once for the syllable.
    const harmonics: number[] = [];
    for (let k = 1; k * pitch < 4000; k++) {
      const f = k * pitch;
      const resonance = (centre: number, width: number) => 1 / (1 + ((f - centre) / width) ** 2);
      harmonics.push((resonance(f1, 90) + 0.7 * resonance(f2, 120) + 0.35 * resonance(f3, 160)) / Math.sqrt(k));
    }
    const onsetSamples = segment.onset === 'fricative' ? Math.round(0.06 * rate) : segment.onset === 'plosive' ? Math.round(0.015 * rate) : 0;
    const attack = Math.round(0.02 * rate);
    const release = Math.round(0.05 * rate);
    for (let n = 0; n < length; n++) {
      let sample = 0;
      if (n < onsetSamples) {
        // Consonant onset: high-passed noise (a hiss for fricatives, a short click for plosives).
        const noise = random.next() * 2 - 1;
        lowpass += 0.3 * (noise - lowpass);
        sample = (noise - lowpass) * (segment.onset === 'fricative' ? 0.25 : 0.5);
      } else {
        const voiced = n - onsetSamples;
        const vibrato = 1 + 0.01 * Math.sin((2 * Math.PI * 5 * (offset + n)) / rate);
        phase += (2 * Math.PI * pitch * vibrato) / rate;
        for (let k = 0; k < harmonics.length; k++) sample += harmonics[k]! * Math.sin((k + 1) * phase);
        const envelope = Math.min(1, voiced / attack, (length - n) / release);
        sample *= envelope * (segment.loudness ?? 1);
      }
      out[offset + n] = sample;
    }
    if (phase > 1e6) phase %= 2 * Math.PI;
    offset += length;
  });
  return out.subarray(0, Math.min(out.length, offset + Math.round(0.1 * rate)));
}

/** Speech-like audio for `text`: syllables at a speaking rate, formant vowels, consonant noise and a falling pitch. */
export function generateSpeechWav(input: SpeechInput): Buffer {
  return encodeWav(toPcm16(speechSamples(input)), SPEECH_SAMPLE_RATE);
}
