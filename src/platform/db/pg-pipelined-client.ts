import net from 'node:net';
import pg from 'pg';

/**
 * A node-postgres client in its pipeline mode (`pipeline: true`) on a socket it opened itself (the documented `stream`
 * option), so the group-commit runner can hold the socket's writes while it sends a group: node-postgres writes each
 * query as it is submitted, and the group then leaves in one write instead of one per statement. On TLS the
 * connection writes through its TLS socket and the hold has no effect.
 */
export function pipelinedClient(Base: typeof pg.Client): typeof pg.Client {
  return class PipelinedClient extends Base {
    readonly socket: net.Socket;
    constructor(config?: string | pg.ClientConfig) {
      const socket = new net.Socket();
      super(Object.assign({}, typeof config === 'string' ? { connectionString: config } : config, { pipeline: true, stream: () => socket }));
      this.socket = socket;
    }
  };
}

/** Runs `submit` with the client's writes held, then sends them in one go (a client of another class: as it is). */
export function inOneWrite<T>(client: pg.ClientBase, submit: () => T): T {
  const socket = (client as { socket?: net.Socket }).socket;
  socket?.cork();
  try {
    return submit();
  } finally {
    socket?.uncork();
  }
}
