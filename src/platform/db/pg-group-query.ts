import pg from 'pg';
import { serialize } from 'pg-protocol';

/** A statement of a group: its text, its prepared statement's name and its values as node-postgres prepares them. */
export interface EncodedStatement {
  text: string;
  name: string;
  /** Text, bytes (sent as binary) or null. */
  values: (string | Buffer | null)[];
}

/**
 * A group's messages in one buffer, written by node-postgres' own serializer (pg-protocol): per statement Parse (when
 * the connection has not prepared its text yet), Bind, Describe portal (unless its columns are known) and Execute, then
 * one Sync. A hand-written encoder of the same bytes measured no better end to end (docs/decisions.md).
 */
const encodeGroup = (statements: EncodedStatement[], plan: { parse: ReadonlySet<number>; describe: ReadonlySet<number> }): Buffer =>
  Buffer.concat([
    ...statements.flatMap((statement, i) => [
      ...(plan.parse.has(i) ? [serialize.parse({ name: statement.name, text: statement.text, types: [] })] : []),
      serialize.bind({ statement: statement.name, values: statement.values }),
      ...(plan.describe.has(i) ? [serialize.describe({ type: 'P', name: '' })] : []),
      serialize.execute({ portal: '' }),
    ]),
    serialize.sync(),
  ]);

// One group of statements on the wire (pg-grouped.ts) as a node-postgres submittable, and how its rows are read.

interface ProtocolField {
  name: string;
  dataTypeID: number;
  format: string;
}

export interface Connection {
  parsedStatements: Record<string, string>;
  stream: { writable: boolean; write(bytes: Buffer): boolean };
}

/** How a statement's rows are read: node-postgres' own parser per column, and every column set to null to copy. */
interface RowShape {
  fields: ProtocolField[];
  names: string[];
  parsers: ((value: string) => unknown)[];
  /** Each row starts as a copy of this (one shape, no growing). */
  emptyRow: Record<string, unknown>;
}

function rowShape(fields: ProtocolField[]): RowShape {
  const emptyRow: Record<string, unknown> = {};
  for (const field of fields) emptyRow[field.name] = null;
  return {
    fields,
    names: fields.map((field) => field.name),
    parsers: fields.map((field) => pg.types.getTypeParser(field.dataTypeID, 'text') as (value: string) => unknown),
    emptyRow,
  };
}

const sameFields = (a: ProtocolField[], b: ProtocolField[]) =>
  a.length === b.length && a.every((field, i) => field.name === b[i]!.name && field.dataTypeID === b[i]!.dataTypeID);

/**
 * A prepared statement describes the same columns every time: its shape is built once (by statement name), and once it
 * is known the statement is no longer described. PostgreSQL refuses to run a prepared statement whose result columns
 * changed (a migration altered a table it reads): "cached plan must not change result type", so a known shape holds.
 */
const shapes = new Map<string, RowShape>();

/** A statement that answers no rows (a SET, say) is known from the start: it is never described. */
export const knownToAnswerNoRows = (name: string): void => void shapes.set(name, rowShape([]));

/** One group on the wire, as a node-postgres submittable: its rows by statement, or where it failed. */
export class GroupQuery {
  readonly rows: Record<string, unknown>[][] = [];
  /** Statements whose text this group parsed on the connection (by position). */
  readonly parsedHere = new Set<number>();
  /** The shapes known when the group was sent, by position; the other statements are described. */
  private readonly known: (RowShape | undefined)[];
  private shape: RowShape | null = null;
  private current: Record<string, unknown>[] = [];
  readonly done: Promise<void>;
  private settle!: { resolve(): void; reject(err: unknown): void };

  constructor(readonly statements: EncodedStatement[]) {
    this.done = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
    this.known = statements.map((statement) => shapes.get(statement.name));
  }

  /** The position of the statement that was answering when the group failed. */
  get position(): number {
    return this.rows.length;
  }

  /**
   * Writes the group onto the connection, even while another group is in flight on it: PostgreSQL answers them in the
   * order they were written, and node-postgres routes the answers to the group whose turn it is.
   */
  writeTo(connection: Connection): void {
    this.statements.forEach((statement, i) => {
      if (connection.parsedStatements[statement.name] !== undefined) return;
      connection.parsedStatements[statement.name] = statement.text;
      this.parsedHere.add(i);
    });
    // As node-postgres does: a closed stream writes nothing, and the connection's error answers the group.
    if (connection.stream.writable) connection.stream.write(encodeGroup(this.statements, { parse: this.parsedHere, describe: this.toDescribe() }));
  }

  /** node-postgres' call when the group's turn on the connection comes: the runner wrote it already (`writeTo`). */
  submit(): null {
    return null;
  }

  private toDescribe(): Set<number> {
    const positions = new Set<number>();
    this.known.forEach((shape, i) => shape === undefined && positions.add(i));
    return positions;
  }

  handleRowDescription(message: { fields: ProtocolField[] }): void {
    const name = this.statements[this.position]!.name;
    let shape = shapes.get(name);
    if (!shape || !sameFields(shape.fields, message.fields)) {
      shape = rowShape(message.fields);
      shapes.set(name, shape);
    }
    this.shape = shape;
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    // A statement that was not described answers with its rows at once: its shape was known when the group went out.
    const { names, parsers, emptyRow } = (this.shape ??= this.known[this.position]!);
    const row = { ...emptyRow };
    const values = message.fields;
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as string | null;
      row[names[i]!] = value === null ? null : parsers[i]!(value);
    }
    this.current.push(row);
  }

  handleCommandComplete(): void {
    this.rows.push(this.current);
    this.current = [];
    this.shape = null;
  }

  handleEmptyQuery(): void {
    this.handleCommandComplete();
  }

  handleError(err: unknown): void {
    this.settle.reject(err);
  }

  handleReadyForQuery(): void {
    this.settle.resolve();
  }

  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}
}
