/** The account module's public entry: its service and the sign-in hook it gives the auth module. */
export { createAccountService, type AccountService } from './service.js';
export { unseenIpNotifier } from './security-alerts.js';
export type { UserBlockedHook } from './blocks.js';
export type { ProfileVisibility, ProfileVisibilityChangedHook } from './profile.js';
