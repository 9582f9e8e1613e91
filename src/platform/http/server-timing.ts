import type { FastifyInstance } from 'fastify';

/**
 * The phases of one request as the `Server-Timing` header names them (https://w3c.github.io/server-timing/), so a
 * caller sees the service's own time beside the upstream's. Phases measured more than once (a fallback sizes the call
 * again) add up. Plain numbers and one array: the metered hot path pays a `performance.now()` per phase and nothing
 * else.
 *
 * Concurrency: one per request, written by the request's own code only; `header()` reads what is recorded by then
 * (a streamed answer sends its header with the first byte, before the upstream's total and the settlement are known).
 */
export class ServerTiming {
  private readonly names: string[] = [];
  private readonly durations: number[] = [];

  /** Adds `ms` to the phase `name`. */
  add(name: string, ms: number): void {
    const index = this.names.indexOf(name);
    if (index === -1) {
      this.names.push(name);
      this.durations.push(ms);
    } else this.durations[index]! += ms;
  }

  /** Times `fn` as the phase `name` (whether it resolves or throws). */
  async measure<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.add(name, performance.now() - started);
    }
  }

  /** The milliseconds recorded for `name` so far (0 when none). */
  get(name: string): number {
    const index = this.names.indexOf(name);
    return index === -1 ? 0 : this.durations[index]!;
  }

  get empty(): boolean {
    return this.names.length === 0;
  }

  /** `auth;dur=0.4, route;dur=1.2`: milliseconds to a tenth. */
  header(): string {
    return this.names.map((name, i) => `${name};dur=${round(this.durations[i]!)}`).join(', ');
  }

  /** The phases by name, in milliseconds to a tenth (what a usage record keeps). */
  toJSON(): Record<string, number> {
    return Object.fromEntries(this.names.map((name, i) => [name, round(this.durations[i]!)]));
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's phases; sent as `Server-Timing` when any was recorded. */
    timing: ServerTiming;
  }
}

/** Gives every request a `ServerTiming` and answers it in the `Server-Timing` header when a phase was recorded. */
export function registerServerTiming(app: FastifyInstance): void {
  app.decorateRequest('timing', null as unknown as ServerTiming);
  app.addHook('onRequest', async (request) => {
    request.timing = new ServerTiming();
  });
  app.addHook('onSend', async (request, reply) => {
    if (!request.timing.empty && !reply.hasHeader('server-timing')) reply.header('server-timing', request.timing.header());
  });
}
