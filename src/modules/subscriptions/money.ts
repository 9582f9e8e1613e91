/** Minor units as a person reads them: `116097, 'BDT'` → `1,160.97 BDT`. Exact for any integer (BigInt arithmetic). */
export function formatMoney(minorUnits: number | bigint, currency: string): string {
  const value = BigInt(minorUnits);
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const whole = (abs / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = (abs % 100n).toString().padStart(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction} ${currency}`;
}

/** Checks that a money amount from our own arithmetic is a safe non-negative integer before it is stored. */
export function toSafeCents(value: bigint): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`amount out of range: ${value}`);
  return Number(value);
}
