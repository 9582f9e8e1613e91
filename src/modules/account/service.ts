import { createHook, type Subscribable } from '../../platform/events/hooks.js';
import { composeMail } from '../../platform/mail/compose.js';
import { toMeUser, toSecurityEvent, type TwoFactor } from '../auth/index.js';
import { jsonFile, type ExportSection } from './archive.js';
import { createBlocks, type UserBlockedHook } from './blocks.js';
import { createDataExports, dataExportJobs } from './data-export.js';
import { createDeletion, type AccountDeletedHook } from './deletion.js';
import type { AccountDeps, AccountServiceDeps } from './deps.js';
import { createEmailFlows } from './email.js';
import { createPasswordFlows, passwordResetJobs } from './password.js';
import { createProfile, type ProfileVisibilityChangedHook } from './profile.js';
import { createSecurityViews, toSession } from './security.js';

export interface AccountServiceOptions extends AccountServiceDeps {
  twoFactor: Pick<TwoFactor, 'exportFor'>;
}

/** Account management: password and email flows, sessions and history, profile, preferences, blocks, export, deletion. */
export function createAccountService(options: AccountServiceOptions) {
  const { notifications, auth } = options;

  const deps: AccountDeps = {
    ...options,
    async securityMail(userId, content, to) {
      const user = await auth.users.findActiveById(userId);
      if (!user || !(await notifications.getPrefs(userId)).emailSecurityAlerts) return;
      await options.mailer.send(composeMail(to ?? user.email, { ...content, greeting: user.name }));
    },
  };

  // The modules that keep the rules of these events in step subscribe once they are built (src/services.ts).
  const accountDeleted = createHook<Parameters<AccountDeletedHook>>(
    'account.accountDeleted',
    'subscribe the workspaces, API keys, webhooks, community and responses clean-ups',
  );
  const userBlocked = createHook<Parameters<UserBlockedHook>>('account.userBlocked', "subscribe the community's onUserBlocked");
  const profileVisibilityChanged = createHook<Parameters<ProfileVisibilityChangedHook>>(
    'account.profileVisibilityChanged',
    "subscribe the community's onProfileVisibilityChanged",
  );

  const profile = createProfile(deps, profileVisibilityChanged.emit);
  const blocks = createBlocks(deps, userBlocked.emit);
  const extraSections: ExportSection[] = [];

  /** What this module puts in a data export; other modules add theirs with `addExportSection`. */
  const ownSections: ExportSection[] = [
    {
      name: 'account',
      async collect(userId) {
        const user = await auth.users.findActiveById(userId);
        if (!user) return [];
        const identities = await auth.users.linkedIdentities(userId);
        const blockList = await blocks.list(userId, { limit: 10_000 });
        return [
          jsonFile('profile.json', { ...toMeUser(user), emailVerified: user.emailVerified }),
          jsonFile('preferences.json', await profile.getPreferences(userId)),
          jsonFile('notification-preferences.json', await notifications.getPrefs(userId)),
          jsonFile('two-factor.json', await options.twoFactor.exportFor(userId)),
          jsonFile('linked-sign-in-providers.json', identities),
          jsonFile('blocks.json', blockList.items),
        ];
      },
    },
    {
      name: 'security',
      async collect(userId) {
        const sessionRows = await auth.sessions.listAll(userId);
        const events = await auth.securityEvents.listAll(userId);
        return [
          jsonFile(
            'sessions.json',
            sessionRows.map((s) => ({ ...toSession(s, null), current: undefined, revokedAt: s.revokedAt?.toISOString() ?? null })),
          ),
          jsonFile('security-events.json', events.map(toSecurityEvent)),
        ];
      },
    },
    {
      name: 'notifications',
      async collect(userId) {
        return [jsonFile('notifications.json', (await notifications.exportFor(userId)).notifications)];
      },
    },
  ];

  const exports = createDataExports(deps, () => [...ownSections, ...extraSections]);

  const password = createPasswordFlows(deps);

  return {
    /**
     * Raised in the transaction that deletes an account, after this module's own work: the other modules end what the
     * account held there. A handler that throws refuses the deletion (nothing is deleted).
     */
    accountDeleted: accountDeleted as Subscribable<Parameters<AccountDeletedHook>>,
    /** Raised in the transaction that creates a BLOCK (the social graph drops the follows both ways). */
    userBlocked: userBlocked as Subscribable<Parameters<UserBlockedHook>>,
    /** Raised in the transaction that changes `profileVisibility` (the community's posts and works take the new audience). */
    profileVisibilityChanged: profileVisibilityChanged as Subscribable<Parameters<ProfileVisibilityChangedHook>>,
    password,
    email: createEmailFlows(deps),
    security: createSecurityViews(deps),
    profile,
    blocks,
    exports,
    deletion: createDeletion(deps, accountDeleted.emit),

    /** Adds a module's part to every data export (e.g. generations with their media files, API keys). */
    addExportSection(section: ExportSection) {
      if ([...ownSections, ...extraSections].some((s) => s.name === section.name)) throw new Error(`Export section "${section.name}" exists twice`);
      extraSections.push(section);
    },

    jobs: () => [...dataExportJobs(exports), ...passwordResetJobs(password)],
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
