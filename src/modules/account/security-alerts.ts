import type { SignInHook } from '../auth/index.js';
import type { NotificationsService } from '../notifications/service.js';

/** A sign-in from an address the account never used before leaves a security notification in the inbox. */
export function unseenIpNotifier(notifications: Pick<NotificationsService, 'notify'>): SignInHook {
  return async (tx, { user, client, at, method, sessionId, unseenIp }) => {
    if (!unseenIp) return;
    await notifications.notify(tx, {
      userId: user.id,
      type: 'SYSTEM',
      title: 'New sign-in from an unfamiliar address',
      body: `Your account was signed in from ${client.ip} (${describe(client.userAgent)}) at ${at.toISOString()}. If this was not you, change your password and sign out the other sessions.`,
      payload: { kind: 'SECURITY_NEW_IP', ipAddress: client.ip, userAgent: client.userAgent, method, sessionId, at: at.toISOString() },
    });
  };
}

const describe = (userAgent: string | null) => (userAgent ? userAgent.slice(0, 120) : 'unknown device');
