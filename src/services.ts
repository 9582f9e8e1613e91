import type { Platform } from './platform/platform.js';
import type { AnyJobDefinition } from './platform/jobs/jobs.js';
import { createAuthService } from './modules/auth/service.js';

/** The composition root of the domain: every service built once, with exactly the dependencies it uses. */
export function createServices(platform: Platform) {
  const { db, clock, tokens } = platform;
  const auth = createAuthService({ db, clock, tokens, onUserCreated: [] });
  return { auth };
}

export type Services = ReturnType<typeof createServices>;

/** Background queues of the domain modules, registered with the job runner at boot. */
export function domainJobs(_platform: Platform, _services: Services): AnyJobDefinition[] {
  return [];
}
