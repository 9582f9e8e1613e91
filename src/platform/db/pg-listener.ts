import pg from 'pg';

/** Shown in `pg_stat_activity.application_name`, so operators (and tests) can tell the LISTEN connection apart. */
export const LISTENER_APPLICATION_NAME = 'storefront-listener';

export interface PgListenerOptions {
  /** How to open the connection (the listener adds its application name and TCP keepalive). */
  client: pg.ClientConfig;
  onError?: (err: Error) => void;
  /** Reconnect delays: doubling from `minMs` up to `maxMs`, each picked at random in its upper half. */
  backoff?: { minMs: number; maxMs: number };
  random?: () => number;
}

/**
 * The one connection that LISTENs for a PostgreSQL database handle. A lost connection (server restart, failover, a
 * terminated backend, a socket that ends) is opened again with backoff, at once and without waiting for a caller, and
 * LISTENs again on every channel that has handlers; handlers stay registered across reconnects. Notifications sent
 * while it was away are lost: `onReset` callbacks hear of each such gap (see `Database.onListenerReset`).
 */
export interface PgListener {
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>;
  onReset(callback: () => void): () => void;
  /** Ends the connection and stops reconnecting for good. */
  close(): Promise<void>;
}

const quote = (channel: string) => '"' + channel.replace(/"/g, '""') + '"';

export function createPgListener(options: PgListenerOptions): PgListener {
  const { onError } = options;
  const { minMs, maxMs } = options.backoff ?? { minMs: 100, maxMs: 5_000 };
  const random = options.random ?? Math.random;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const resetCallbacks = new Set<() => void>();
  let current: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let reconnecting: Promise<void> | null = null;
  let wakeReconnect: (() => void) | null = null;
  // Set by a lost connection or a failed attempt: the next connection reports the gap to `onReset` callbacks.
  let missed = false;
  let closed = false;

  function dispatch(msg: pg.Notification): void {
    for (const handler of handlers.get(msg.channel) ?? []) {
      try {
        handler(msg.payload ?? '');
      } catch (err) {
        onError?.(err as Error);
      }
    }
  }

  function lost(client: pg.Client, err?: Error): void {
    if (client !== current) return; // 'error' and 'end' both come for one loss
    current = null;
    missed = true;
    onError?.(err ?? new Error('the LISTEN connection ended'));
    client.end().catch(() => undefined);
    reconnect();
  }

  async function open(): Promise<pg.Client> {
    // TCP keepalive: a peer gone without a word (a failover's dead host) ends the socket in time, and so fires 'end'.
    const client = new pg.Client(
      Object.assign({}, options.client, { application_name: LISTENER_APPLICATION_NAME, keepAlive: true, keepAliveInitialDelayMillis: 10_000 }),
    );
    client.on('notification', dispatch);
    client.on('error', (err) => lost(client, err));
    client.on('end', () => lost(client));
    try {
      await client.connect();
      // Every channel at once; a channel a concurrent `listen` adds meanwhile is LISTENed by it (LISTEN is idempotent).
      const channels = [...handlers.keys()];
      if (channels.length > 0) await client.query(channels.map((channel) => `LISTEN ${quote(channel)}`).join('; '));
    } catch (err) {
      missed = true;
      client.end().catch(() => undefined);
      throw err;
    }
    if (closed) {
      await client.end().catch(() => undefined);
      throw new Error('the database is closed');
    }
    current = client;
    if (missed) {
      missed = false;
      for (const callback of resetCallbacks) {
        try {
          callback();
        } catch (err) {
          onError?.(err as Error);
        }
      }
    }
    return client;
  }

  function connection(): Promise<pg.Client> {
    if (closed) return Promise.reject(new Error('the database is closed'));
    if (current) return Promise.resolve(current);
    connecting ??= open().finally(() => (connecting = null));
    return connecting;
  }

  const delay = (attempt: number) => {
    const ceiling = Math.min(maxMs, minMs * 2 ** attempt);
    return ceiling / 2 + (random() * ceiling) / 2;
  };

  /** Opens the connection again until it is back, the last handler is gone, or the listener is closed. */
  function reconnect(): void {
    if (reconnecting || closed) return;
    reconnecting = (async () => {
      for (let attempt = 0; !closed && !current && handlers.size > 0; attempt++) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay(attempt));
          timer.unref();
          wakeReconnect = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wakeReconnect = null;
        if (closed || current || handlers.size === 0) break;
        await connection().catch((err: unknown) => onError?.(err as Error));
      }
    })().finally(() => (reconnecting = null));
  }

  return {
    async listen(channel, onMessage) {
      let set = handlers.get(channel);
      const added = !set;
      if (!set) handlers.set(channel, (set = new Set()));
      set.add(onMessage);
      try {
        const client = await connection();
        if (added) await client.query(`LISTEN ${quote(channel)}`);
      } catch (err) {
        // Not kept: the caller hears of the failure and subscribes again later, as it did before this connection.
        set.delete(onMessage);
        if (set.size === 0 && handlers.get(channel) === set) handlers.delete(channel);
        throw err;
      }
      return async () => {
        set.delete(onMessage);
        if (set.size === 0 && handlers.get(channel) === set) {
          handlers.delete(channel);
          await current?.query(`UNLISTEN ${quote(channel)}`).catch(() => undefined);
        }
      };
    },
    onReset(callback) {
      resetCallbacks.add(callback);
      return () => resetCallbacks.delete(callback);
    },
    async close() {
      closed = true;
      wakeReconnect?.();
      const client = current;
      current = null;
      await Promise.all([client?.end().catch(() => undefined), connecting?.catch(() => undefined), reconnecting]);
    },
  };
}
