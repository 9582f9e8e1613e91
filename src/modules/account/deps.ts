import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import type { Jobs } from '../../platform/jobs/jobs.js';
import type { MailContent } from '../../platform/mail/compose.js';
import type { Mailer } from '../../platform/mail/mailer.js';
import type { Storage } from '../../platform/storage/storage.js';
import type { AuthData } from '../auth/index.js';
import type { NotificationsService } from '../notifications/service.js';

/** What the account service is built from (see `createAccountService`). */
export interface AccountServiceDeps {
  db: Db;
  clock: Clock;
  mailer: Mailer;
  storage: Storage;
  jobs: Pick<Jobs, 'send'>;
  /** Key for hashing short secrets (reset OTPs) and signing download links; see `derivePepper`. */
  pepper: Buffer;
  /** Where links in mails point (the web app). */
  frontendUrl: string;
  /** This service's own public address (download links). */
  publicBaseUrl: string;
  notifications: NotificationsService;
  /** Users, sessions and the security history (the auth module's tables). */
  auth: AuthData;
  /** Tells every instance when a user's blocks change (their cached hidden authors); without it, this instance only. */
  events?: EventBus;
}

/** The dependencies every part of the account module shares. */
export interface AccountDeps extends AccountServiceDeps {
  /** Mails the user a security notice, unless they switched `emailSecurityAlerts` off. */
  securityMail(userId: string, content: Omit<MailContent, 'greeting'>, to?: string): Promise<void>;
}
