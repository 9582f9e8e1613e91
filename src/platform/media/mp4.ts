/** ISO BMFF (MP4) box walking: enough to check a file and to rewrite it for streaming. */
export interface Mp4Box {
  type: string;
  /** Offset of the box header in the file. */
  start: number;
  size: number;
  headerSize: number;
  children?: Mp4Box[];
}

const CONTAINERS = new Set(['moov', 'trak', 'mdia', 'minf', 'stbl', 'edts', 'dinf', 'udta', 'mvex', 'moof', 'traf']);

/** Parses the boxes of `data[from, to)`, descending into container boxes. Throws on a truncated or malformed box. */
export function parseBoxes(data: Buffer, from = 0, to = data.length): Mp4Box[] {
  const boxes: Mp4Box[] = [];
  let offset = from;
  while (offset + 8 <= to) {
    let size = data.readUInt32BE(offset);
    const type = data.toString('latin1', offset + 4, offset + 8);
    let headerSize = 8;
    if (size === 1) {
      size = Number(data.readBigUInt64BE(offset + 8));
      headerSize = 16;
    } else if (size === 0) {
      size = to - offset;
    }
    if (size < headerSize || offset + size > to) throw new Error(`malformed MP4 box "${type}" at ${offset}`);
    const box: Mp4Box = { type, start: offset, size, headerSize };
    if (CONTAINERS.has(type)) box.children = parseBoxes(data, offset + headerSize, offset + size);
    boxes.push(box);
    offset += size;
  }
  if (offset !== to) throw new Error(`trailing bytes after the last MP4 box at ${offset}`);
  return boxes;
}

/** Every box of a type, anywhere in the tree. */
export function findBoxes(boxes: Mp4Box[], type: string): Mp4Box[] {
  return boxes.flatMap((box) => [...(box.type === type ? [box] : []), ...findBoxes(box.children ?? [], type)]);
}

/** The box payload after its header (full boxes still start with version and flags). */
export const payloadOf = (data: Buffer, box: Mp4Box) => data.subarray(box.start + box.headerSize, box.start + box.size);

/** Sets the creation and modification times of mvhd, tkhd and mdhd, so equal content gives equal bytes. */
function fixTimes(file: Buffer, boxes: Mp4Box[], seconds: number): void {
  for (const box of [...findBoxes(boxes, 'mvhd'), ...findBoxes(boxes, 'tkhd'), ...findBoxes(boxes, 'mdhd')]) {
    const at = box.start + box.headerSize;
    if (file[at] === 1) {
      file.writeBigUInt64BE(BigInt(seconds), at + 4);
      file.writeBigUInt64BE(BigInt(seconds), at + 12);
    } else {
      file.writeUInt32BE(seconds, at + 4);
      file.writeUInt32BE(seconds, at + 8);
    }
  }
}

/**
 * Rewrites an MP4 whose `moov` follows `mdat` into the streaming layout (ftyp, moov, mdat, known as "faststart"),
 * dropping `free` padding and shifting the chunk offsets; times are set to a fixed value for reproducible bytes.
 */
export function normaliseMp4(input: Buffer, fixedTimeSeconds = 0): Buffer {
  const file = Buffer.from(input);
  const top = parseBoxes(file);
  fixTimes(file, top, fixedTimeSeconds);
  const ftyp = top.find((b) => b.type === 'ftyp');
  const moov = top.find((b) => b.type === 'moov');
  const mdat = top.find((b) => b.type === 'mdat');
  if (!ftyp || !moov || !mdat) throw new Error('MP4 lacks ftyp, moov or mdat');
  const rest = top.filter((b) => !['ftyp', 'moov', 'mdat', 'free', 'skip'].includes(b.type));
  const newMdatStart = ftyp.size + moov.size + rest.reduce((sum, b) => sum + b.size, 0);
  const shift = newMdatStart - mdat.start;
  const moovBytes = Buffer.from(file.subarray(moov.start, moov.start + moov.size));
  for (const stco of findBoxes([moov], 'stco')) {
    const at = stco.start - moov.start + stco.headerSize;
    const count = moovBytes.readUInt32BE(at + 4);
    for (let i = 0; i < count; i++) {
      const position = at + 8 + i * 4;
      const value = moovBytes.readUInt32BE(position) + shift;
      if (value > 0xffffffff) throw new Error('chunk offset overflow');
      moovBytes.writeUInt32BE(value, position);
    }
  }
  for (const co64 of findBoxes([moov], 'co64')) {
    const at = co64.start - moov.start + co64.headerSize;
    const count = moovBytes.readUInt32BE(at + 4);
    for (let i = 0; i < count; i++) {
      const position = at + 8 + i * 8;
      moovBytes.writeBigUInt64BE(moovBytes.readBigUInt64BE(position) + BigInt(shift), position);
    }
  }
  const slice = (b: Mp4Box) => file.subarray(b.start, b.start + b.size);
  return Buffer.concat([slice(ftyp), moovBytes, ...rest.map(slice), slice(mdat)]);
}

export interface Mp4VideoInfo {
  brands: string[];
  durationSeconds: number;
  width: number;
  height: number;
  codec: string;
  /** AVC profile_idc from avcC (66 = Baseline). */
  avcProfile: number | null;
  sampleCount: number;
  moovBeforeMdat: boolean;
}

/** Reads the basic facts of the first video track of an MP4 (used to check generated files). */
export function readMp4Info(file: Buffer): Mp4VideoInfo {
  const top = parseBoxes(file);
  const ftyp = top.find((b) => b.type === 'ftyp');
  if (!ftyp) throw new Error('no ftyp box');
  const ftypData = payloadOf(file, ftyp);
  const brands = [ftypData.toString('latin1', 0, 4)];
  for (let i = 8; i + 4 <= ftypData.length; i += 4) brands.push(ftypData.toString('latin1', i, i + 4));
  const mvhd = findBoxes(top, 'mvhd')[0];
  if (!mvhd) throw new Error('no mvhd box');
  const mv = payloadOf(file, mvhd);
  const [timescale, duration] = mv[0] === 1 ? [mv.readUInt32BE(20), Number(mv.readBigUInt64BE(24))] : [mv.readUInt32BE(12), mv.readUInt32BE(16)];
  const tkhd = findBoxes(top, 'tkhd')[0];
  if (!tkhd) throw new Error('no tkhd box');
  const tk = payloadOf(file, tkhd);
  const sizeAt = tk[0] === 1 ? 88 : 76;
  const stsd = findBoxes(top, 'stsd')[0];
  if (!stsd) throw new Error('no stsd box');
  const sd = payloadOf(file, stsd);
  const codec = sd.toString('latin1', 12, 16);
  const avcCAt = sd.indexOf('avcC', 0, 'latin1');
  const stsz = findBoxes(top, 'stsz')[0];
  const sampleCount = stsz ? payloadOf(file, stsz).readUInt32BE(8) : 0;
  const moovIndex = top.findIndex((b) => b.type === 'moov');
  const mdatIndex = top.findIndex((b) => b.type === 'mdat');
  return {
    brands,
    durationSeconds: duration / timescale,
    width: tk.readUInt32BE(sizeAt) / 65536,
    height: tk.readUInt32BE(sizeAt + 4) / 65536,
    codec,
    avcProfile: avcCAt >= 0 ? sd[avcCAt + 5]! : null,
    sampleCount,
    moovBeforeMdat: moovIndex >= 0 && mdatIndex >= 0 && moovIndex < mdatIndex,
  };
}
