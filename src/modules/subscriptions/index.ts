/** The subscriptions module's public entry: the read side, and trials, switches, coupons and the lifecycle beside it. */
export { createSubscriptionsService, type SubscriptionsService } from './service.js';
export { createSubscriptionBillingService } from './billing.js';
export { subscriptionJobs } from './jobs.js';
export type { PaymentsPort, ChannelPolicy, CheckoutRequest, CheckoutSession, ConfirmedPayment, FulfilmentResult } from './payments-port.js';
export type { SubscriptionBillingService } from './billing.js';
export { COUPON_CODE, type CouponState, type NewCoupon } from './coupons.js';
