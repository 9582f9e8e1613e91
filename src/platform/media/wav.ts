/** Encodes 16-bit PCM samples (interleaved when `channels` > 1) as a canonical 44-byte-header WAV file. */
export function encodeWav(samples: Int16Array, sampleRate: number, channels = 1): Buffer {
  if (!Number.isInteger(sampleRate) || sampleRate < 1000 || sampleRate > 192_000) throw new RangeError(`bad sample rate ${sampleRate}`);
  if (samples.length % channels !== 0) throw new RangeError('sample count must be a multiple of the channel count');
  const dataBytes = samples.length * 2;
  const out = Buffer.alloc(44 + dataBytes);
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write('WAVE', 8, 'latin1');
  out.write('fmt ', 12, 'latin1');
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(channels, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * channels * 2, 28); // byte rate
  out.writeUInt16LE(channels * 2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, 44 + i * 2);
  return out;
}

/** Scales float samples to 16-bit with the loudest sample at `peak` of full scale (silence stays silence). */
export function toPcm16(samples: Float32Array, peak = 0.85): Int16Array {
  let max = 0;
  for (let i = 0; i < samples.length; i++) max = Math.max(max, Math.abs(samples[i]!));
  const gain = max > 0 ? (peak * 32767) / max : 0;
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = Math.round(samples[i]! * gain);
  return out;
}

export interface WavInfo {
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  dataBytes: number;
  durationSeconds: number;
}

/** Reads the format of a PCM WAV file (walking its chunks); throws when it is not one. */
export function readWavInfo(file: Buffer): WavInfo {
  if (file.length < 12 || file.toString('latin1', 0, 4) !== 'RIFF' || file.toString('latin1', 8, 12) !== 'WAVE') {
    throw new Error('not a RIFF/WAVE file');
  }
  let offset = 12;
  let format: Omit<WavInfo, 'dataBytes' | 'durationSeconds'> | null = null;
  while (offset + 8 <= file.length) {
    const id = file.toString('latin1', offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    if (id === 'fmt ') {
      format = { channels: file.readUInt16LE(offset + 10), sampleRate: file.readUInt32LE(offset + 12), bitsPerSample: file.readUInt16LE(offset + 22) };
    } else if (id === 'data') {
      if (!format) throw new Error('data chunk before fmt chunk');
      const bytesPerFrame = (format.bitsPerSample / 8) * format.channels;
      return { ...format, dataBytes: size, durationSeconds: size / bytesPerFrame / format.sampleRate };
    }
    offset += 8 + size + (size % 2);
  }
  throw new Error('no data chunk');
}
