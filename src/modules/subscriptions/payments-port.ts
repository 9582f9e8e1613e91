/**
 * The seam between subscriptions and the payments module (which sits above this one and is built later).
 *
 * Subscriptions prices a plan purchase or change, records it as a `subscription_changes` row and asks the port for
 * a hosted checkout whose purpose names that row. When the gateway confirms the payment, the payments module calls
 * `fulfilSubscriptionPayment(tx, payment)` in the transaction that records the confirmation; fulfilment is
 * idempotent by the payment id. Until a port is wired in, a switch that needs money is refused with a 400 stating
 * the amount.
 */
export interface SubscriptionPurpose {
  kind: 'subscription';
  /** The `subscription_changes` row the payment pays for. */
  changeId: string;
  subscriptionId: string;
  planId: string;
}

export interface CheckoutRequest {
  userId: string;
  purpose: SubscriptionPurpose;
  /** Minor units, priced by this module (proration and coupon applied). */
  amountCents: number;
  currency: string;
  /** Channel slug chosen by the customer (`provider` in the API). */
  channel: string;
  recurring: boolean;
  /** The channel's required fields, passed through unchecked (the payments module validates them). */
  extra?: Record<string, unknown>;
  successUrl?: string;
  cancelUrl?: string;
  /** Shown on the hosted page, e.g. "Pro plan (upgrade)". */
  description: string;
}

export interface CheckoutSession {
  paymentId: string;
  redirectUrl: string;
}

export interface ChannelPolicy {
  /** The channel always renews itself (carrier billing). */
  autoRenews: boolean;
  /** The channel can keep a recurring mandate when the customer asks (`recurring: true`). */
  supportsRecurring: boolean;
}

export interface PaymentsPort {
  /** The channel's renewal policy, or null when it is unknown, disabled or not configured. */
  channelPolicy(channel: string): Promise<ChannelPolicy | null>;
  /** Opens a hosted checkout; throws an AppError (400 / 503) the customer can act on when the gateway refuses. */
  createCheckout(request: CheckoutRequest): Promise<CheckoutSession>;
  /** Voids an unpaid checkout whose change the customer replaced or cancelled (best effort). */
  cancelCheckout(paymentId: string): Promise<void>;
}

/** A confirmed payment as the payments module hands it to fulfilment. */
export interface ConfirmedPayment {
  id: string;
  userId: string;
  amountCents: number;
  currency: string;
  purpose: SubscriptionPurpose;
}

export type FulfilmentResult =
  | {
      status: 'fulfilled';
      changeId: string;
      subscriptionId: string;
      applied: boolean;
      /** This instance's after-commit work: the payments module calls it once the confirming transaction committed. */
      committed?: () => void;
    }
  | { status: 'already_fulfilled'; changeId: string; subscriptionId: string }
  /** Nothing was changed; the payment stays visible to operators for review (refund or manual fix). */
  | { status: 'unfulfillable'; reason: string };
