/** True when `err` (or the driver error Drizzle wrapped in it) is a unique violation, optionally of one constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const driverError = withSqlState(err, '23505');
  return driverError !== null && (constraint === undefined || driverError.constraint === constraint);
}

/** The driver error carrying SQLSTATE `code`, found in `err` or the errors Drizzle wrapped in it; null when none does. */
export function withSqlState(err: unknown, code: string): { code: string; constraint?: string; message: string } | null {
  for (let current: unknown = err; current && typeof current === 'object'; current = (current as { cause?: unknown }).cause) {
    const candidate = current as { code?: string; constraint?: string; message: string };
    if (candidate.code === code) return { code, constraint: candidate.constraint, message: candidate.message };
  }
  return null;
}
