import type { payments } from '../../db/schema/payments.js';
import type { Tx } from '../../platform/db/database.js';

export type PaymentRow = typeof payments.$inferSelect;

/** A gateway message as it reached one of our webhook routes, before any parsing we could be fooled by. */
export interface CallbackInput {
  method: 'GET' | 'POST';
  headers: Record<string, string | undefined>;
  /** The exact bytes of the body (signatures are computed over them); '' for a GET. */
  rawBody: string;
  query: Record<string, string>;
}

export type CallbackOutcome = 'succeeded' | 'failed' | 'cancelled' | 'refunded' | 'pending' | 'unsubscribed';

/** What a channel's verification established about one gateway message. */
export interface VerifiedCallback {
  /** The gateway's identity of this message (a replay is the same key). */
  eventKey: string;
  /** How to find our payment: its id (sent to the gateway as a reference), or the gateway's checkout id. */
  paymentId?: string;
  gatewayRef?: string;
  outcome: CallbackOutcome;
  gatewayTxnId?: string | null;
  /** Minor units the gateway says moved (from the verified message or the gateway's own API). */
  amountCents?: number | null;
  currency?: string | null;
  payload: unknown;
  /** The gateway's id of a saved authorisation this payment created (a vaulted wallet), for later renewals. */
  agreementId?: string | null | undefined;
  /** Fields of the payment's `extra` the message must agree with (the carrier's phone number). */
  matches?: Record<string, string> | undefined;
}

export interface CheckoutContext {
  /** Our webhook address for this channel. */
  callbackUrl: string;
  /** Where the gateway sends the browser back: our return route, which then uses the stored URL. */
  returnUrl: (result: 'success' | 'cancel' | 'fail') => string;
}

export type ReturnResult = 'success' | 'cancel' | 'fail';

export interface CheckoutOpened {
  gatewayRef: string;
  redirectUrl: string;
}

/** One payment channel: hosted checkout, callback verification by the channel's own method, status re-query. */
export interface ChannelAdapter {
  readonly slug: string;
  readonly mode: 'live' | 'sandbox';
  createCheckout(payment: PaymentRow, context: CheckoutContext): Promise<CheckoutOpened>;
  /** Throws `invalidCallback` for anything not proven genuine. */
  verifyCallback(input: CallbackInput): Promise<VerifiedCallback>;
  /** Asks the gateway where a checkout stands (reconciliation); null when it says nothing final. */
  requery(payment: PaymentRow): Promise<VerifiedCallback | null>;
  /**
   * The browser's return carries the gateway's outcome for some channels (bKash-style `paymentID` and `status` in the
   * query, SSLCommerz-style form posts): it is treated as one more callback, verified the same way. Returns the
   * message and the result it implies, or null.
   */
  callbackFromReturn?(params: Record<string, string>): { callback: CallbackInput; result: ReturnResult } | null;
  /** Work on the browser's return before it goes to the stored URL (e.g. capturing an approved order). */
  onReturn?(payment: PaymentRow, result: 'success' | 'cancel' | 'fail'): Promise<void>;
  /**
   * Charges a saved agreement without the customer (a renewal); the confirmation comes by callback or re-query as for
   * any payment. Channels without it open an ordinary charge flagged as a renewal (carrier billing renews by itself).
   */
  chargeAgreement?(payment: PaymentRow, agreementId: string, context: CheckoutContext): Promise<CheckoutOpened>;
  /** Deletes a saved agreement at the gateway (best effort; ours is cancelled whatever it answers). */
  revokeAgreement?(agreementId: string): Promise<void>;
  /** Gives the money back at the gateway (channels whose API refunds); the books follow the refund callback or at once. */
  refund?(payment: PaymentRow): Promise<void>;
  /** Carrier billing with a PIN: the customer's PIN goes to the carrier. */
  verifyPin?(payment: PaymentRow, pin: string): Promise<'ok' | 'wrong' | 'expired'>;
}

/** A payment the gateway confirmed, as the owning module's fulfilment handler receives it. */
export interface ConfirmedPurchase {
  id: string;
  userId: string;
  amountCents: number;
  currency: string;
  purpose: Record<string, unknown> & { kind: string };
}

export type HandlerResult = ({ status: 'fulfilled' | 'already_fulfilled' } | { status: 'unfulfillable'; reason: string }) & {
  /** Runs once the confirming transaction committed: the owning module's own after-commit work (a cache to drop). */
  committed?: () => void;
};

/** Registered by the module that owns a kind of purchase (`subscription`, later `topup`); runs in the confirming transaction. */
export type FulfilmentHandler = (tx: Tx, payment: ConfirmedPurchase) => Promise<HandlerResult>;
