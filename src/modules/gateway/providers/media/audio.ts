/** Small WAV helpers for audio adapters. */

/** Wraps raw signed 16-bit little-endian mono PCM (what `pcm_<rate>` formats return) in a WAV container. */
export function pcm16ToWav(pcm: Buffer, sampleRate: number, channels = 1): Buffer {
  const frameBytes = 2 * channels;
  const dataBytes = pcm.length - (pcm.length % frameBytes);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * frameBytes, 28);
  header.writeUInt16LE(frameBytes, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(dataBytes, 40);
  return Buffer.concat([header, pcm.subarray(0, dataBytes)]);
}

/**
 * Seconds of audio in a PCM WAV file, or null when it is not one. Streamed WAVs often declare an unknown (maximal)
 * data size, so the bytes actually present are counted.
 */
export function wavDurationSeconds(file: Buffer): number | null {
  if (file.length < 12 || file.toString('latin1', 0, 4) !== 'RIFF' || file.toString('latin1', 8, 12) !== 'WAVE') return null;
  let offset = 12;
  let bytesPerSecond = 0;
  while (offset + 8 <= file.length) {
    const id = file.toString('latin1', offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    if (id === 'fmt ' && offset + 24 <= file.length) {
      const channels = file.readUInt16LE(offset + 10);
      const sampleRate = file.readUInt32LE(offset + 12);
      const bitsPerSample = file.readUInt16LE(offset + 22);
      bytesPerSecond = sampleRate * channels * (bitsPerSample / 8);
    } else if (id === 'data') {
      if (!bytesPerSecond) return null;
      const present = Math.min(size, file.length - offset - 8);
      return present / bytesPerSecond;
    }
    offset += 8 + size + (size % 2);
  }
  return null;
}
