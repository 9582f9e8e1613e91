/**
 * In-process wiring between two modules that must talk both ways, without a cycle in their construction. The lower
 * module owns the seam and is built first; the composition root (src/services.ts) builds the higher module next and
 * then subscribes or connects it:
 * - a hook is an event the owner raises (`emit`); any number of handlers subscribe to it;
 * - a port is one answer the owner asks for; exactly one provider is connected to it at a time.
 * Nothing here crosses instances: work another instance must see goes through the outbox or the EventBus.
 *
 * Rules of a hook:
 * - Order: handlers run one at a time, each awaited, in the order they subscribed.
 * - Errors: the first handler that throws stops the run; the handlers after it do not run, and the error reaches the
 *   emitter unchanged. An emitter inside a transaction therefore rolls back its own work and every handler's.
 * - Transactions: handlers get the emitter's arguments as they are, its transaction handle included, so their writes
 *   commit or roll back with the emitter's work.
 * - No subscriber: `emit` does nothing. Whether that is acceptable is the composition root's call: it names what the
 *   service requires in `assertWired`, which fails the start, saying what to wire, while any of them is unwired.
 * Subscribe and connect while the composition root runs (it is synchronous, so before any work can emit).
 */

/** A hook or port as the start check sees it. */
export interface Wireable {
  /** Owner and seam, e.g. `wallet.reservationSwept`. */
  readonly name: string;
  /** What the composition root must subscribe or connect, e.g. "subscribe the gateway's recordSwept". */
  readonly wireHint: string;
  readonly wired: boolean;
}

/** A hook as its owner publishes it: others subscribe, only the owner emits. */
export interface Subscribable<Args extends unknown[]> extends Wireable {
  /** Adds a handler after the ones before it; returns the function that removes it. */
  subscribe(handler: (...args: Args) => Promise<void>): () => void;
}

export interface Hook<Args extends unknown[]> extends Subscribable<Args> {
  /** Runs the handlers in subscription order, each awaited; the first error stops the run and is thrown. Needs no `this`. */
  emit: (...args: Args) => Promise<void>;
}

/** A port as its owner publishes it: others connect the provider, only the owner asks it. */
export interface Connectable<T> extends Wireable {
  /** Connects the provider in place of the one before; returns the function that puts the one before back. */
  connect(provider: T): () => void;
  disconnect(): void;
}

export interface Port<T> extends Connectable<T> {
  /** The provider, or null while none is connected (for answers that have a default). */
  current(): T | null;
  /** The provider; throws, naming what to wire, while none is connected. */
  require(): T;
}

export function createHook<Args extends unknown[]>(name: string, wireHint: string): Hook<Args> {
  const handlers: Array<(...args: Args) => Promise<void>> = [];
  return {
    name,
    wireHint,
    get wired() {
      return handlers.length > 0;
    },
    subscribe(handler) {
      // Wrapped so the same function subscribed twice runs twice and is removed once per call.
      const entry = (...args: Args) => handler(...args);
      handlers.push(entry);
      return () => {
        const at = handlers.indexOf(entry);
        if (at >= 0) handlers.splice(at, 1);
      };
    },
    async emit(...args) {
      // A copy: a handler that subscribes or unsubscribes does not change the run in progress.
      for (const handler of [...handlers]) await handler(...args);
    },
  };
}

export function createPort<T>(name: string, wireHint: string): Port<T> {
  let provider: T | null = null;
  return {
    name,
    wireHint,
    get wired() {
      return provider !== null;
    },
    connect(next) {
      const before = provider;
      provider = next;
      return () => void (provider = before);
    },
    disconnect() {
      provider = null;
    },
    current: () => provider,
    require() {
      if (provider === null) throw new Error(`${name} is not connected: ${wireHint}.`);
      return provider;
    },
  };
}

/** Fails the start when a hook or port the service requires is unwired, naming each one and what to wire. */
export function assertWired(required: readonly Wireable[]): void {
  const missing = required.filter((seam) => !seam.wired);
  if (missing.length === 0) return;
  const lines = missing.map((seam) => `- ${seam.name}: ${seam.wireHint}`);
  throw new Error(`The composition root left ${missing.length} required hook(s) or port(s) unwired:\n${lines.join('\n')}`);
}
