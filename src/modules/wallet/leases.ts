/**
 * The heartbeat of this process's reservations. A reservation held by a live process keeps a short lease that is
 * renewed here every `intervalMs`; when the process dies the renewals stop, the lease runs out within
 * `leaseSeconds`, and the sweeper settles or releases what it left. The timer runs only while something is held.
 */
export function createLeaseKeeper(deps: { intervalMs: number; renew: (requestIds: string[]) => Promise<void>; onError: (err: unknown) => void }) {
  const held = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  function beat(): void {
    if (held.size === 0) return;
    deps.renew([...held]).catch(deps.onError);
  }

  return {
    hold(requestId: string): void {
      if (stopped) return;
      held.add(requestId);
      if (!timer) {
        timer = setInterval(beat, deps.intervalMs);
        timer.unref();
      }
    },
    /** Settled, released, or handed to someone else: no longer renewed by this process. */
    letGo(requestId: string): void {
      held.delete(requestId);
      if (held.size === 0 && timer) {
        clearInterval(timer);
        timer = null;
      }
    },
    holds: (requestId: string) => held.has(requestId),
    stop(): void {
      stopped = true;
      held.clear();
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
