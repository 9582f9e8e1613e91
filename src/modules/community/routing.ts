import type { CommunityService } from './service.js';

/** What every community route plugin is given (`src/app.ts`). */
export interface CommunityRouteOptions {
  community: CommunityService;
  /** Refuses a caller whose account is no longer active (the auth service's check); on required-auth routes. */
  ensureActive: (userId: string) => Promise<unknown>;
}

export const viewerOf = (request: { principal: { userId: string } | null }) => request.principal?.userId ?? null;
