export interface SwitchInput {
  planId: string;
  provider?: string;
  recurring?: boolean;
  extra?: Record<string, unknown>;
  couponCode?: string;
  successUrl?: string;
  cancelUrl?: string;
}

/** Which subscription the route names, and which kind it promised (`/:id/upgrade`, `/:id/downgrade`). */
export interface SwitchScope {
  subscriptionId?: string;
  expectKind?: 'upgrade' | 'downgrade';
}

export interface SwitchResult {
  kind: 'upgrade' | 'downgrade';
  planId: string;
  subscriptionId: string;
  changeId: string | null;
  paymentId: string | null;
  redirectUrl?: string;
  recurring: boolean;
  scheduled: boolean;
  switched: boolean;
  settled: boolean;
  effectiveAt: string | null;
  amountDueCents: number;
  discountCents: number;
  currency: string;
}
