/** A driver's client (pg Pool or Client, PGlite): `query(text, values)` or, on pg, `query({ name, text, values })`. */
export interface DriverClient {
  query(config: unknown, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * The driver's client under a Drizzle database or transaction. A database hands it out publicly (`$client`); a
 * transaction does not: its session holds the connection it runs on as `session.client`, private in Drizzle's typings,
 * and Drizzle offers no public way to it. Named prepared statements in a transaction (bound.ts) and pg-boss's jobs sent
 * in the caller's transaction (`queryInTransaction`) need that connection. This is the one private member of a library
 * the service reads: drizzle-orm is pinned exactly in package.json, and drizzle-session.test.ts names the member, so an
 * upgrade that moves it fails there with what to re-check.
 */
export function driverClientOf(handle: object): DriverClient | undefined {
  const client = (handle as unknown as { $client?: DriverClient }).$client ?? (handle as unknown as { session?: { client?: DriverClient } }).session?.client;
  return client && typeof client.query === 'function' ? client : undefined;
}
