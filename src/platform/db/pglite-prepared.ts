import { parse, protocol, type PGlite } from '@electric-sql/pglite';

/**
 * Named prepared statements on PGlite, for bound SQL (`runBound`). PGlite's `query` parses, describes, binds and
 * describes again in separate trips into WebAssembly for every call, and plans the statement each time; the hot
 * statements are long CTEs, so that was most of an embedded metered call. Here each text is parsed and described once
 * per database; a call is one trip: bind, describe the portal, execute and sync.
 */
export type PreparedRun = (text: string, values: unknown[]) => Promise<{ rows: unknown[] }>;

/**
 * Runs bound SQL as a prepared statement through PGlite's protocol API (`execProtocolStream`), which takes none of
 * PGlite's locks: the caller holds the database (pglite-client.ts).
 */

interface Prepared {
  name: string;
  /** The parameters' type oids, for PGlite's serializers (as `query` does). */
  paramTypes: number[];
}

/** Bound texts are constants or a few joined shapes; this only bounds the memory if that ever stops being true. */
const MAX_PREPARED = 500;

export function pglitePrepared(client: PGlite): PreparedRun {
  const statements = new Map<string, Prepared>();

  async function prepare(text: string): Promise<Prepared> {
    if (statements.size >= MAX_PREPARED) {
      await client.execProtocolStream(protocol.serialize.query('deallocate all'), { syncToFs: false });
      statements.clear();
    }
    const name = `sf_${statements.size + 1}`;
    // One trip, Sync included: an error (bad SQL) is thrown after PGlite has run them all, so the session is ready.
    const messages = await client.execProtocolStream(
      Buffer.concat([protocol.serialize.parse({ name, text }), protocol.serialize.describe({ type: 'S', name }), protocol.serialize.sync()]),
      { syncToFs: false },
    );
    const description = messages.find((m) => m.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined;
    const prepared = { name, paramTypes: description?.dataTypeIDs ?? [] };
    statements.set(text, prepared);
    return prepared;
  }

  async function execute(text: string, values: unknown[]): Promise<{ rows: unknown[] }> {
    const statement = statements.get(text) ?? (await prepare(text));
    const serialized = values.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = client.serializers[statement.paramTypes[i]!];
      if (serializer) return serializer(value);
      if (typeof value === 'string') return value;
      return typeof value === 'object' ? JSON.stringify(value) : (value as number | boolean | bigint).toString();
    });
    const messages = await client.execProtocolStream(
      Buffer.concat([
        protocol.serialize.bind({ statement: statement.name, values: serialized }),
        protocol.serialize.describe({ type: 'P' }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]),
      { syncToFs: false },
    );
    return parse.parseResults(messages, client.parsers)[0] ?? { rows: [] };
  }

  return execute;
}
