/** Asks until `check` holds, within `ms`; returns how long that took (for changes another instance hears of). */
export async function within(check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    const elapsed = performance.now() - started;
    if (elapsed > ms) throw new Error(`still stale after ${Math.round(elapsed)} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
