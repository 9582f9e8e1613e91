/**
 * Inputs and outputs of the top-up pricing engine. The engine is pure: everything it needs (settings, components
 * with their tokens per unit, rules with their usage counts, channels, the customer and `now`) is passed in.
 * Money is integer minor units (poisha for BDT); percentages of money are basis points (1/100 of a percent).
 */

import type { ComponentPricing, RuleEffect } from '../../../db/schema/topup.js';

export type { ComponentPricing, RuleEffect, TierPrice } from '../../../db/schema/topup.js';

export type ComponentKind = 'CREDITS' | 'MODEL_USAGE';

export interface EngineComponent {
  key: string;
  name: string;
  description: string;
  kind: ComponentKind;
  /** What one unit is called (`credit`, `image`, `5-second clip`, `1,000 characters`, `reply`). */
  unit: string;
  enabled: boolean;
  minUnits: number;
  maxUnits: number;
  step: number;
  defaultUnits: number;
  /** Wallet tokens one unit turns into (given by the caller: credits from the token settings, media from the catalog). */
  tokensPerUnit: number;
  pricing: ComponentPricing;
}

export interface EngineSettings {
  enabled: boolean;
  currency: string;
  tokensPerCredit: number;
  /** Provider cost that `tokenValueTokens` tokens stand for, in minor units (default 1,800 poisha per 1,000,000). */
  tokenValueCents: number;
  tokenValueTokens: number;
  /** Shares of the sell price an AI-cost price covers (basis points): gateway fee, VAT, profit. */
  gatewayFeeBp: number;
  vatBp: number;
  profitBp: number;
  /** The least profit a quote keeps if every token (bonus included) is used, as a share of the amount. */
  profitFloorBp: number;
  /** The largest total discount, as a share of the price before discounts. */
  maxDiscountBp: number;
  roundToCents: number;
  minOrderCents: number;
  maxOrderCents: number;
}

export const DEFAULT_ENGINE_SETTINGS: EngineSettings = {
  enabled: true,
  currency: 'BDT',
  tokensPerCredit: 10_000,
  tokenValueCents: 1_800,
  tokenValueTokens: 1_000_000,
  gatewayFeeBp: 500,
  vatBp: 1_500,
  profitBp: 4_000,
  profitFloorBp: 1_000,
  maxDiscountBp: 5_000,
  roundToCents: 100,
  minOrderCents: 2_000,
  maxOrderCents: 1_000_000,
};

export type Audience = 'EVERYONE' | 'FIRST_TOPUP' | 'NEW_ACCOUNT';

export interface RuleConditions {
  minUnits?: { component: string; units: number } | null;
  /** Subtotal (price before discounts) the selection must reach. */
  minSpendCents?: number | null;
  /** Days of the week in Bangladesh time (UTC+6), 0 = Sunday ... 6 = Saturday. */
  daysOfWeek?: number[] | null;
  audience?: Audience | null;
  /** For `NEW_ACCOUNT`: the account is younger than this many days. */
  newAccountDays?: number | null;
  /** Only when paying with one of these channels. */
  channels?: string[] | null;
  startsAt?: Date | null;
  endsAt?: Date | null;
  /** Paid orders that may use the rule in all. */
  maxUses?: number | null;
  oncePerCustomer?: boolean | null;
}

export interface EngineRule {
  id: string;
  name: string;
  description: string;
  type: 'BONUS' | 'PROMOTION';
  active: boolean;
  /** Higher wins inside a group and is dropped last for the profit floor. */
  priority: number;
  /** Rules of one group do not stack; null stacks with everything. */
  group: string | null;
  effect: RuleEffect;
  conditions: RuleConditions;
}

/** Paid orders that used a rule: in all, and by the customer asking. */
export interface RuleUsage {
  total: number;
  byCustomer: number;
}

export interface EngineChannel {
  slug: string;
  name: string;
  enabled: boolean;
  minAmountCents: number;
  maxAmountCents: number;
  /** Registered amounts; empty means any amount (unless `registeredAmountsOnly`). */
  amountsCents: number[];
  /** Carrier billing: takes only registered amounts, and is not offered when none are registered. */
  registeredAmountsOnly: boolean;
}

export interface EngineCustomer {
  /** No paid top-up yet. */
  firstTopUp: boolean;
  accountCreatedAt: Date;
}

export interface QuoteInput {
  settings: EngineSettings;
  components: EngineComponent[];
  rules: EngineRule[];
  channels: EngineChannel[];
  selection: Record<string, number>;
  /** Signed-in customer, or null for an anonymous quote. */
  customer: EngineCustomer | null;
  channel: string | null;
  /** Usage counts per rule id; a missing entry counts as none. */
  usage: Record<string, RuleUsage>;
  now: Date;
}

export interface QuoteIssue {
  /** A component key, `amount` for the order limits, `selection` for an empty one, `enabled` when top-ups are off. */
  field: string;
  message: string;
}

export interface QuoteLine {
  key: string;
  name: string;
  kind: ComponentKind;
  unit: string;
  units: number;
  tokensPerUnit: number;
  tokens: number;
  unitPriceCents: number;
  priceCents: number;
  tierMinUnits: number | null;
}

export interface AppliedRule {
  id: string;
  name: string;
  type: EngineRule['type'];
  effect: RuleEffect;
  discountCents: number;
  bonusTokens: number;
}

export type OfferRequirement =
  | { type: 'MIN_UNITS'; component: string; units: number; missingUnits: number }
  | { type: 'MIN_SPEND'; amountCents: number; missingCents: number }
  | { type: 'CHANNEL'; channels: string[] }
  | { type: 'SIGN_IN' };

export interface QuoteOffer {
  id: string;
  name: string;
  type: EngineRule['type'];
  requirement: OfferRequirement;
}

export interface Quote {
  valid: boolean;
  issues: QuoteIssue[];
  currency: string;
  lines: QuoteLine[];
  subtotalCents: number;
  discountCents: number;
  amountCents: number;
  tokens: number;
  bonusTokens: number;
  totalTokens: number;
  credits: number;
  bonusCredits: number;
  totalCredits: number;
  applied: AppliedRule[];
  offers: QuoteOffer[];
  payableWith: string[];
  unavailableChannels: { slug: string; reason: string }[];
  usage: { items: { displayName: string; unit: string; units: number }[]; tokensSpent: number; tokensLeft: number };
}
