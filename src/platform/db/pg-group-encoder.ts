/**
 * The extended-protocol messages of a whole group (pg-grouped.ts) written into ONE buffer: per statement Parse (when
 * the connection has not prepared its text yet), Bind, Describe portal (unless its columns are known already) and
 * Execute, then one Sync. The same bytes node-postgres' serializer writes message by message, without its per-message
 * buffers (each Bind grew its own buffer in steps and copied it every time) and with one string scan per value instead
 * of two: strings are written into room for their worst case and their length prefix is filled in from what was
 * written.
 */
export interface EncodedStatement {
  text: string;
  name: string;
  /** Values as node-postgres prepares them: text, bytes (sent as binary) or null. */
  values: (string | Buffer | null)[];
}

const DESCRIBE_PORTAL = Buffer.from([0x44, 0, 0, 0, 6, 0x50, 0]);
const EXECUTE = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0]);
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);

/** Strings up to this length are tried as ASCII first (see writeUtf8). */
const SHORT = 64;

/**
 * Writes `text` as UTF-8 at `at` and returns the bytes written. Short ASCII strings (ids, times, numbers: most values)
 * are copied in a loop, which costs less than a call into the native encoder; anything else goes to the encoder.
 */
function writeUtf8(buffer: Buffer, text: string, at: number): number {
  const length = text.length;
  if (length <= SHORT) {
    let i = 0;
    for (; i < length; i++) {
      const code = text.charCodeAt(i);
      if (code >= 0x80) break;
      buffer[at + i] = code;
    }
    if (i === length) return length;
  }
  return buffer.write(text, at, 'utf8');
}

/** The most bytes a string can take in UTF-8: three per UTF-16 unit. */
const worstCase = (text: string) => text.length * 3;

/** Positions of the group's statements: `parse`, not prepared on the connection yet; `describe`, whose columns are asked for. */
export interface GroupPlan {
  parse: ReadonlySet<number>;
  describe: ReadonlySet<number>;
}

function capacityOf(statements: EncodedStatement[], plan: GroupPlan): number {
  let size = SYNC.length;
  for (const [i, statement] of statements.entries()) {
    if (plan.parse.has(i)) size += 1 + 4 + worstCase(statement.name) + 1 + worstCase(statement.text) + 1 + 2;
    size += 1 + 4 + 1 + worstCase(statement.name) + 1 + 2 + 2 * statement.values.length + 2 + 2 + 2;
    for (const value of statement.values) size += 4 + (value === null ? 0 : typeof value === 'string' ? worstCase(value) : value.length);
    if (plan.describe.has(i)) size += DESCRIBE_PORTAL.length;
    size += EXECUTE.length;
  }
  return size;
}

/** A statement's Parse goes before its Bind; a Describe, when asked for, between its Bind and its Execute. */
export function encodeGroup(statements: EncodedStatement[], plan: GroupPlan): Buffer {
  const buffer = Buffer.allocUnsafe(capacityOf(statements, plan));
  let at = 0;
  const cString = (text: string) => {
    at += writeUtf8(buffer, text, at);
    buffer[at++] = 0;
  };
  for (const [i, statement] of statements.entries()) {
    if (plan.parse.has(i)) {
      const start = at;
      buffer[at] = 0x50;
      at += 5;
      cString(statement.name);
      cString(statement.text);
      at = buffer.writeInt16BE(0, at);
      buffer.writeInt32BE(at - start - 1, start + 1);
    }
    const start = at;
    buffer[at] = 0x42;
    at += 5;
    buffer[at++] = 0; // the unnamed portal
    cString(statement.name);
    const count = statement.values.length;
    at = buffer.writeInt16BE(count, at);
    for (const value of statement.values) at = buffer.writeInt16BE(Buffer.isBuffer(value) ? 1 : 0, at);
    at = buffer.writeInt16BE(count, at);
    for (const value of statement.values) {
      if (value === null) {
        at = buffer.writeInt32BE(-1, at);
      } else if (typeof value === 'string') {
        const length = writeUtf8(buffer, value, at + 4);
        buffer.writeInt32BE(length, at);
        at += 4 + length;
      } else {
        at = buffer.writeInt32BE(value.length, at);
        at += value.copy(buffer, at);
      }
    }
    at = buffer.writeInt16BE(1, at); // one result format for every column:
    at = buffer.writeInt16BE(0, at); // text
    buffer.writeInt32BE(at - start - 1, start + 1);
    if (plan.describe.has(i)) at += DESCRIBE_PORTAL.copy(buffer, at);
    at += EXECUTE.copy(buffer, at);
  }
  at += SYNC.copy(buffer, at);
  return buffer.subarray(0, at);
}
