/** True when `err` (or the driver error Drizzle wrapped in it) is a unique violation, optionally of one constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  for (let current: unknown = err; current && typeof current === 'object'; current = (current as { cause?: unknown }).cause) {
    const { code, constraint: name } = current as { code?: string; constraint?: string };
    if (code === '23505') return constraint === undefined || name === constraint;
  }
  return false;
}
