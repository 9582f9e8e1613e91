/** Integer money helpers: every division says how it rounds. */

export const BP = 10_000n;

export const big = (value: number): bigint => BigInt(value);

/** ceil(a / b) for a >= 0, b > 0. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  if (a <= 0n) return 0n;
  return (a + b - 1n) / b;
}

/** floor(a / b) for a >= 0, b > 0. */
export function floorDiv(a: bigint, b: bigint): bigint {
  if (a <= 0n) return 0n;
  return a / b;
}

/** Rounds up to the next multiple of `step` (an amount already on the step stays). */
export function roundUpTo(amount: bigint, step: bigint): bigint {
  return ceilDiv(amount, step) * step;
}

/** Converts back to a number; the engine's amounts stay far below 2^53. */
export function toNumber(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('amount out of range');
  return Number(value);
}

/** A credit figure for display: tokens / tokensPerCredit floored to two decimals. */
export function creditsOf(tokens: number, tokensPerCredit: number): number {
  return toNumber(floorDiv(big(tokens) * 100n, big(tokensPerCredit))) / 100;
}
