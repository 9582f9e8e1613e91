import type { Platform } from './platform/platform.js';
import type { AnyJobDefinition, JobName, Jobs } from './platform/jobs/jobs.js';
import { walletJobs } from './modules/wallet/jobs.js';
import { subscriptionJobs } from './modules/subscriptions/index.js';
import { paymentJobs } from './modules/payments/jobs.js';
import type { Services } from './services.js';

/** Background queues of the domain modules, registered with the job runner at boot. */
export function domainJobs(_platform: Platform, services: Services): AnyJobDefinition[] {
  return [
    ...walletJobs(services.wallet),
    ...subscriptionJobs(services.subscriptionBilling),
    ...paymentJobs(services.payments),
    ...services.gateway.jobs(),
    ...services.jobs.jobs(),
    ...services.media.jobs(),
    ...services.account.jobs(),
    ...services.webhooks.jobs(),
    ...services.community.jobs(),
    ...services.announcements.jobs(),
    ...services.responses.jobs(),
  ];
}

/** Queues named `test.*` are declared by tests (platform/jobs/jobs.test.ts), never sent to by the service. */
type ServiceQueue = Exclude<JobName, `test.${string}`>;

/**
 * Every queue the code can send to: one key per name of `JobPayloads`, so tsc refuses the list when a module
 * declares a queue that is missing here (or a name that no longer exists).
 */
export const SENDABLE_QUEUES = Object.keys({
  'mail.deliver': true,
  'account.data-export': true,
  'account.data-export.cleanup': true,
  'account.password-reset-code': true,
  'subscriptions.lifecycle': true,
  'payments.reconcile': true,
  'wallet.sweep-reservations': true,
  'gateway.idempotency-purge': true,
  'media.job-run': true,
  'media.job-poll': true,
  'jobs.resume-abandoned': true,
  'webhooks.deliver': true,
  'webhooks.purge': true,
  'community.trending': true,
  'announcements.notify': true,
  'compat.responses-purge': true,
} satisfies Record<ServiceQueue, true>) as ServiceQueue[];

/** Registers the domain's queues, then stops the start, with the queue's name, if a queue code can send to has no handler. */
export function registerJobs(jobs: Pick<Jobs, 'register' | 'assertHandled'>, definitions: AnyJobDefinition[]): void {
  jobs.register(definitions);
  jobs.assertHandled(SENDABLE_QUEUES);
}
