/**
 * The heartbeat of what this process holds (wallet reservations, running jobs). Each held row keeps a short lease
 * that is renewed here every `intervalMs`; when the process dies the renewals stop, the lease runs out, and a sweeper
 * on another instance takes over what it left. The timer runs only while something is held.
 */
export function createLeaseKeeper(deps: { intervalMs: number; renew: (ids: string[]) => Promise<void>; onError: (err: unknown) => void }) {
  const held = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  function beat(): void {
    if (held.size === 0) return;
    deps.renew([...held]).catch(deps.onError);
  }

  return {
    hold(id: string): void {
      if (stopped) return;
      held.add(id);
      if (!timer) {
        timer = setInterval(beat, deps.intervalMs);
        timer.unref();
      }
    },
    /** Settled, released, or handed to someone else: no longer renewed by this process. */
    letGo(id: string): void {
      held.delete(id);
      if (held.size === 0 && timer) {
        clearInterval(timer);
        timer = null;
      }
    },
    holds: (id: string) => held.has(id),
    stop(): void {
      stopped = true;
      held.clear();
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
