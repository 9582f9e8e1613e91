/**
 * Errors that say the connection to the database was lost or could not be had, rather than that a statement was
 * wrong: the same request may well succeed a moment later (on another connection, or once the database is back).
 */
const LOST_CONNECTION_CODES = new Set([
  // Node's sockets (node-postgres passes them through)
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // PostgreSQL: admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now, too_many_connections
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** node-postgres, pg-pool and PGlite say it in words only. */
const LOST_CONNECTION_MESSAGES = [
  /^Connection terminated/, // unexpectedly, due to connection timeout, or plain
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
  /^terminating connection due to administrator command$/,
  /^PGlite is closed$/,
];

function lostHere(candidate: { code?: unknown; message?: unknown }): boolean {
  const code = typeof candidate.code === 'string' ? candidate.code : '';
  // SQLSTATE class 08: connection exception (08000, 08003, 08006 ...).
  if (LOST_CONNECTION_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  const message = typeof candidate.message === 'string' ? candidate.message : '';
  return LOST_CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

/** True when `err`, or an error it wraps (`cause`, as Drizzle wraps driver errors), is a lost database connection. */
export function isConnectionLost(err: unknown): boolean {
  for (let current: unknown = err, depth = 0; current && typeof current === 'object' && depth < 8; current = (current as { cause?: unknown }).cause, depth++) {
    if (lostHere(current)) return true;
  }
  return false;
}
