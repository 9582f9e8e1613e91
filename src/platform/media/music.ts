import { seededRandom } from './random.js';
import { encodeWav, toPcm16 } from './wav.js';

export const MUSIC_SAMPLE_RATE = 44_100;
export const MAX_MUSIC_SECONDS = 180;

export interface MusicInput {
  /** A description of the track (genre, mood, instruments, tempo); it steers tempo, mode and drums. */
  prompt: string;
  seed: number;
  /** Wanted length; when omitted the generator decides (10-30 s), as music models do. */
  durationSeconds?: number;
}

export interface MusicPlan {
  bpm: number;
  minor: boolean;
  drums: boolean;
  bars: number;
  rootMidi: number;
  seconds: number;
}

const MAJOR = [0, 2, 4, 5, 7, 9, 11];
const MINOR = [0, 2, 3, 5, 7, 8, 10];
/** Chord roots as scale degrees: I-V-vi-IV in major, i-VI-III-VII in minor. */
const PROGRESSION = { major: [0, 4, 5, 3], minor: [0, 5, 2, 6] };

const midiToHz = (midi: number) => 440 * 2 ** ((midi - 69) / 12);

/** The musical decisions for a description and seed: tempo, mode, drums and length. */
export function planMusic({ prompt, seed, durationSeconds }: MusicInput): MusicPlan {
  const random = seededRandom('music', prompt, seed);
  const text = prompt.toLowerCase();
  const slow = /\b(slow|calm|ambient|lo-?fi|chill|relax|sleep|piano|ballad)\w*/.test(text);
  const fast = /\b(fast|dance|techno|house|energetic|upbeat|drum|edm|rock|punk)\w*/.test(text);
  const bpm = Math.round(slow ? random.range(66, 88) : fast ? random.range(118, 138) : random.range(90, 116));
  const minor = /\b(sad|dark|melanchol|minor|moody|somber|eerie|night)\w*/.test(text) || (!/\b(happy|bright|major|sunny)\w*/.test(text) && random.next() < 0.4);
  const drums = !/\b(ambient|no drums|drumless|a cappella|piano solo)\b/.test(text) && !(slow && random.next() < 0.5);
  const wanted = durationSeconds ?? random.range(10, 30);
  if (!(wanted > 0 && wanted <= MAX_MUSIC_SECONDS)) throw new RangeError(`duration must be up to ${MAX_MUSIC_SECONDS} s (got ${wanted})`);
  const barSeconds = 240 / bpm;
  const bars = Math.max(1, Math.round(wanted / barSeconds));
  return { bpm, minor, drums, bars, rootMidi: 45 + random.int(0, 11), seconds: bars * barSeconds };
}

/** A music-like track: a chord pad, a bass line, a melody over the scale and (most of the time) a drum pattern. */
export function generateMusicWav(input: MusicInput): Buffer {
  const plan = planMusic(input);
  const random = seededRandom('music-notes', input.prompt, input.seed);
  const rate = MUSIC_SAMPLE_RATE;
  const total = Math.round(plan.seconds * rate) + Math.round(0.5 * rate); // a short tail for the last notes to ring
  const out = new Float32Array(total);
  const scale = plan.minor ? MINOR : MAJOR;
  const progression = plan.minor ? PROGRESSION.minor : PROGRESSION.major;
  const beat = 60 / plan.bpm;
  const noteOf = (degree: number, octave: number) => plan.rootMidi + 12 * octave + scale[((degree % 7) + 7) % 7]! + 12 * Math.floor(degree / 7);

  const addTone = (start: number, seconds: number, hz: number, gain: number, shape: 'pad' | 'pluck' | 'bass') => {
    const first = Math.round(start * rate);
    const count = Math.min(Math.round(seconds * rate), total - first);
    for (let n = 0; n < count; n++) {
      const time = n / rate;
      const phase = 2 * Math.PI * hz * time;
      let envelope: number;
      let wave: number;
      if (shape === 'pad') {
        envelope = Math.min(1, time / 0.3, (seconds - time) / 0.4);
        wave = Math.sin(phase) + 0.3 * Math.sin(2 * phase + 0.5) + 0.15 * Math.sin(3 * phase + 1);
      } else if (shape === 'pluck') {
        envelope = Math.min(1, time / 0.005) * Math.exp(-time * 4);
        wave = Math.sin(phase) + 0.5 * Math.sin(2 * phase) * Math.exp(-time * 8) + 0.25 * Math.sin(3 * phase) * Math.exp(-time * 12);
      } else {
        envelope = Math.min(1, time / 0.01, (seconds - time) / 0.05) * Math.exp(-time * 1.5);
        wave = Math.sin(phase) + 0.2 * Math.sin(2 * phase);
      }
      out[first + n]! += gain * envelope * wave;
    }
  };

  const addDrum = (start: number, kind: 'kick' | 'snare' | 'hat') => {
    const first = Math.round(start * rate);
    const seconds = kind === 'kick' ? 0.35 : kind === 'snare' ? 0.2 : 0.05;
    const count = Math.min(Math.round(seconds * rate), total - first);
    let phase = 0;
    for (let n = 0; n < count; n++) {
      const time = n / rate;
      let sample: number;
      if (kind === 'kick') {
        phase += (2 * Math.PI * (50 + 100 * Math.exp(-time * 30))) / rate;
        sample = Math.sin(phase) * Math.exp(-time * 9) * 0.9;
      } else if (kind === 'snare') {
        sample = ((random.next() * 2 - 1) * 0.6 + Math.sin(2 * Math.PI * 190 * time) * 0.3) * Math.exp(-time * 22);
      } else {
        sample = (random.next() * 2 - 1) * Math.exp(-time * 90) * 0.3;
      }
      out[first + n]! += sample;
    }
  };

  for (let bar = 0; bar < plan.bars; bar++) {
    const barStart = bar * 4 * beat;
    const degree = progression[bar % progression.length]!;
    for (const step of [0, 2, 4]) addTone(barStart, 4 * beat, midiToHz(noteOf(degree + step, 1)), 0.12, 'pad');
    for (let b = 0; b < 4; b++) {
      addTone(barStart + b * beat, beat * 0.9, midiToHz(noteOf(degree + (b === 2 ? 4 : 0), 0)), 0.35, 'bass');
      if (plan.drums) {
        if (b % 2 === 0) addDrum(barStart + b * beat, 'kick');
        else addDrum(barStart + b * beat, 'snare');
        addDrum(barStart + (b + 0.5) * beat, 'hat');
      }
    }
    // Melody: eighth notes walking over the scale around the chord, with rests.
    let position = degree + 7;
    for (let eighth = 0; eighth < 8; eighth++) {
      if (random.next() < 0.25) continue;
      position += random.pick([-2, -1, -1, 0, 1, 1, 2, 3]);
      position = Math.max(degree + 3, Math.min(degree + 14, position));
      addTone(barStart + (eighth * beat) / 2, beat * 0.75, midiToHz(noteOf(position, 1)), 0.22, 'pluck');
    }
  }
  return encodeWav(toPcm16(out, 0.8), rate);
}
