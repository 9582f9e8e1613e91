import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { createPort, type Port } from '../../platform/events/hooks.js';
import { notifyInTransaction } from '../../platform/events/notify-in-transaction.js';
import type { Mailer } from '../../platform/mail/mailer.js';
import type { NotificationsService } from '../notifications/service.js';
import type { PlansService } from '../plans/service.js';
import type { WalletService } from '../wallet/service.js';
import type { PaymentsPort } from './payments-port.js';
import type { SubscriptionsService } from './service.js';

/** Every instance's caches of subscriptions listen here; the payload is `{ userId }`. Sent on commit only. */
export const SUBSCRIPTIONS_CHANGED_CHANNEL = 'subscriptions_changed';

export interface SubscriptionBillingDeps {
  db: Db;
  clock: Clock;
  plans: Pick<PlansService, 'getById' | 'signupDefault'>;
  wallet: Pick<WalletService, 'credit'>;
  subscriptions: Pick<SubscriptionsService, 'activeSubscriptionView'>;
  notifications: Pick<NotificationsService, 'notify' | 'getPrefs'>;
  mailer: Mailer;
  /** The address and name to mail a user at; null for a deleted account. */
  userContact: (userId: string) => Promise<{ email: string; name: string | null } | null>;
  /** Where a coupon-settled switch sends the customer when no successUrl was given. */
  frontendUrl: string;
  /**
   * Called after the commit of every change this module makes to a user's subscriptions (same instance), so an
   * in-process cache can drop that user at once; other instances hear `SUBSCRIPTIONS_CHANGED_CHANNEL`.
   */
  onSubscriptionChanged?: (userId: string) => void;
}

/** Records that a user's subscriptions changed: a NOTIFY in the transaction, and the local hook after commit. */
export interface ChangeLog {
  changed(userId: string): Promise<void>;
}

/** A change log for a transaction someone else commits: they call `committed` once it did. */
export interface ForeignChangeLog extends ChangeLog {
  committed(): void;
}

export interface BillingContext extends SubscriptionBillingDeps {
  /**
   * Where checkouts open: the payments module (built after this one, as it needs this one's fulfilment) connects its
   * port. Until then a switch that needs money is refused with the amount.
   */
  paymentsPort: Port<PaymentsPort>;
  /** The payments port connected now, or null. */
  payments(): PaymentsPort | null;
  /** Runs `fn` in a transaction; the users it marks changed are announced after the commit. */
  transaction<T>(fn: (tx: Tx, log: ChangeLog) => Promise<T>): Promise<T>;
  /**
   * A change log for a transaction owned by someone else (the payments module's): the NOTIFY in it, and this
   * instance's hook once the owner says it committed (without it this instance serves the old subscription until its
   * own NOTIFY comes back).
   */
  foreignLog(tx: Tx): ForeignChangeLog;
}

export function createBillingContext(deps: SubscriptionBillingDeps): BillingContext {
  const notify = (tx: Tx, userId: string) => notifyInTransaction(tx, SUBSCRIPTIONS_CHANGED_CHANNEL, { userId });
  const paymentsPort = createPort<PaymentsPort>('subscriptionBilling.payments', "connect the payments service's port");
  return {
    ...deps,
    paymentsPort,
    payments: () => paymentsPort.current(),
    async transaction(fn) {
      const users = new Set<string>();
      const result = await deps.db.transaction((tx) =>
        fn(tx, {
          async changed(userId) {
            if (users.has(userId)) return;
            users.add(userId);
            await notify(tx, userId);
          },
        }),
      );
      for (const userId of users) deps.onSubscriptionChanged?.(userId);
      return result;
    },
    foreignLog(tx) {
      const users = new Set<string>();
      return {
        async changed(userId) {
          users.add(userId);
          await notify(tx, userId);
        },
        committed: () => users.forEach((userId) => deps.onSubscriptionChanged?.(userId)),
      };
    },
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids from the URL are compared with uuid columns; anything else cannot match (and must not reach the database). */
export const isUuid = (value: string) => UUID.test(value);
