import { describe, expect, it } from 'vitest';
import { isConnectionLost } from './connection-lost.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isConnectionLost', () => {
  it.each([
    ['a reset socket', withCode('ECONNRESET')],
    ['a refused connection', withCode('ECONNREFUSED')],
    ['pg_terminate_backend (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
    ['a connection exception (08006)', withCode('08006')],
    ['too many connections (53300)', withCode('53300')],
    ['node-postgres losing its socket', new Error('Connection terminated unexpectedly')],
    ['pg-pool timing out a connect', new Error('timeout exceeded when trying to connect')],
    ['a pool that was ended', new Error('Cannot use a pool after calling end on the pool')],
    ['a closed PGlite', new Error('PGlite is closed')],
    ['a driver error Drizzle wrapped', new Error('Failed query: select 1', { cause: withCode('57P01') })],
  ])('is true for %s', (_what, err) => {
    expect(isConnectionLost(err)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('23505')],
    ['a syntax error', withCode('42601')],
    ['a statement timeout', withCode('57014')],
    ['a plain error', new Error('Something else')],
    ['a message that only mentions a connection', new Error('The Connection terminated unexpectedly, said the provider')],
    ['nothing', undefined],
  ])('is false for %s', (_what, err) => {
    expect(isConnectionLost(err)).toBe(false);
  });
});
