import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/test-database.js';
import { openDatabase, type Database } from '../db/database.js';
import { createEventBus } from './event-bus.js';

let testDb: TestDatabase;
let publisherDb: Database;
let subscriberDb: Database;

beforeAll(async () => {
  testDb = await createTestDatabase();
  publisherDb = testDb.database ?? (await openDatabase({ url: testDb.url! }));
  // On PostgreSQL the subscriber is a second connection pool, as a second instance would be.
  subscriberDb = testDb.database ?? (await openDatabase({ url: testDb.url! }));
});

afterAll(async () => {
  if (!testDb.database) {
    await publisherDb.close();
    await subscriberDb.close();
  }
  await testDb.drop();
});

describe('event bus over LISTEN/NOTIFY', () => {
  it('delivers published payloads to subscribers until they unsubscribe', async () => {
    const received: unknown[] = [];
    const unsubscribe = await createEventBus(subscriberDb).subscribe('job_events', (payload) => received.push(payload));
    const bus = createEventBus(publisherDb);
    await bus.publish('job_events', { jobId: 'j1', status: 'RUNNING' });
    await bus.publish('other_channel', { ignored: true });
    await bus.publish('job_events', { jobId: 'j1', status: 'SUCCEEDED' });
    const until = Date.now() + 5000;
    while (received.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(received).toEqual([
      { jobId: 'j1', status: 'RUNNING' },
      { jobId: 'j1', status: 'SUCCEEDED' },
    ]);
    await unsubscribe();
    await bus.publish('job_events', { jobId: 'j1', status: 'LATE' });
    await new Promise((r) => setTimeout(r, 200));
    expect(received).toHaveLength(2);
  });
});
