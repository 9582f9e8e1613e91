import { describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { sharedSecret } from './shared-secrets.js';

describe('secrets generated once per database', () => {
  it('gives every caller the same secret, however many ask at once', async () => {
    const testDb = await openTestDatabase();
    const { database } = testDb;
    try {
      const secrets = await Promise.all(Array.from({ length: 10 }, () => sharedSecret(database, 'jwtSecret')));
      expect(new Set(secrets).size).toBe(1);
      expect(secrets[0]!.length).toBeGreaterThanOrEqual(32);
      expect(await sharedSecret(database, 'jwtSecret')).toBe(secrets[0]);
      expect(await sharedSecret(database, 'another')).not.toBe(secrets[0]);
    } finally {
      await testDb.close();
    }
  });
});
