import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobs } from '../src/platform/jobs/jobs.js';
import { mailDeliveryJob } from '../src/platform/mail/mailer.js';
import { SENDABLE_QUEUES, domainJobs, registerJobs } from '../src/domain-jobs.js';
import { createTestApp, type TestApp } from './helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

/** A job runner that is never started, wired the way createPlatform and buildApp wire the real one. */
function freshRunner() {
  const jobs = createJobs({ database: t.platform.database, databaseUrl: null, logger: t.app.log });
  jobs.register([mailDeliveryJob({ db: t.platform.db, smtpUrl: null, logger: t.app.log })]);
  return jobs;
}

describe('job queues are wired at boot', () => {
  it('the built app has a handler for every queue the code can send to', () => {
    expect(SENDABLE_QUEUES).toEqual(expect.arrayContaining(['mail.deliver', 'account.data-export', 'wallet.sweep-reservations', 'media.job-run']));
    expect(() => t.platform.jobs.assertHandled(SENDABLE_QUEUES)).not.toThrow();
    expect(() => registerJobs(freshRunner(), domainJobs(t.platform, t.services))).not.toThrow();
  });

  it('a queue without a handler stops the start, naming the queue', () => {
    const withoutExports = domainJobs(t.platform, t.services).filter((definition) => definition.name !== 'account.data-export');
    expect(() => registerJobs(freshRunner(), withoutExports)).toThrow('No handler is registered for job queue "account.data-export"');
  });

  it('a queue with two handlers stops the start too', () => {
    const definitions = domainJobs(t.platform, t.services);
    expect(() => registerJobs(freshRunner(), [...definitions, definitions[0]!])).toThrow(/has two handlers/);
  });
});
