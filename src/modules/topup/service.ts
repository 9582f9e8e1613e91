import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { quoteTopUp, aiCostPrice } from './engine/index.js';
import type { EngineChannel, EngineComponent, EngineSettings, Quote } from './engine/index.js';
import { createOrders, type ConfirmedTopUpPayment, type OrderPorts, type PaymentSummary, type PlaceOrderInput } from './orders.js';
import { createTopUpAdmin } from './admin.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { loadComponents, loadRules, loadSettings, seedTopUp, toEngineRule, type ComponentRow, type RuleRow } from './store.js';

/** The token settings owned by the catalog (credit size and token value). */
export interface TokenSettings {
  tokensPerCredit: number;
  tokenValueCents: number;
  tokenValueTokens: number;
  currency: string;
  /** The top-up builder's master switch (part of the credit pricing). */
  topUpEnabled: boolean;
}

/** What the wallet's answers point at, cached here so the metered path pays no round trip for them. */
export interface TopUpTerms {
  tokensPerCredit: number;
  /** The credits component's smallest choice and step (a suggested top-up is rounded to them). */
  creditsMinUnits: number;
  creditsStep: number;
  /** A QUOTA_WARNING goes out when a charge takes a wallet under this (0: never). */
  lowBalanceThresholdTokens: number;
}

/** Cached top-up terms are re-read after this long even without a change event (a safety net). */
const TERMS_TTL_MS = 30_000;
const TERMS = 'terms';

/**
 * The suggested top-up of a shortfall (spec B "Top-ups" rule 7): ceil(shortfall / tokensPerCredit) credits, raised to the
 * credits component's minUnits and rounded up to its step.
 */
export function suggestedCredits(shortfallTokens: number, terms: Pick<TopUpTerms, 'tokensPerCredit' | 'creditsMinUnits' | 'creditsStep'>): number {
  const needed = Math.max(Math.ceil(shortfallTokens / terms.tokensPerCredit), terms.creditsMinUnits);
  return Math.ceil(needed / terms.creditsStep) * terms.creditsStep;
}

export interface TopUpServiceDeps {
  db: Db;
  clock: Clock;
  tokenSettings: () => Promise<TokenSettings>;
  /** Payment channels that run now, with the amounts each may take. */
  channels: () => Promise<EngineChannel[]>;
  /** When a signed-in customer's account was created (null when the account is gone). */
  accountCreatedAt: (userId: string) => Promise<Date | null>;
  /** Payments and the wallet, for orders and their fulfilment. */
  orderPorts: OrderPorts;
  /** Status, provider and paid time of payments by id (the admin's order list). */
  paymentSummaries: (paymentIds: string[]) => Promise<Map<string, PaymentSummary>>;
  /** Cross-instance invalidation of the cached terms; without it only this instance's changes refresh them at once. */
  events?: EventBus;
  onBackgroundError?: (err: unknown) => void;
}

export interface QuoteRequest {
  selection: Record<string, number>;
  channel?: string | undefined;
  userId?: string | null;
}

function engineComponent(row: ComponentRow, tokens: TokenSettings): EngineComponent {
  const { tokensPerUnit, sortOrder: _sortOrder, createdAt: _createdAt, updatedAt: _updatedAt, ...rest } = row;
  return { ...rest, tokensPerUnit: row.kind === 'CREDITS' || tokensPerUnit === null ? tokens.tokensPerCredit : tokensPerUnit };
}

/** Offers shown on the options page: switched-on rules, their conditions and effect as configured. */
function offerView(row: RuleRow) {
  const conditions = row.conditions;
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type,
    conditions,
    effect: row.effect,
    endsAt: typeof conditions.endsAt === 'string' ? conditions.endsAt : null,
  };
}

export function createTopUpService(deps: TopUpServiceDeps) {
  const { db, clock } = deps;

  async function pricingContext() {
    const [settingsRow, componentRows, ruleRows, tokens, channels] = await Promise.all([
      loadSettings(db),
      loadComponents(db),
      loadRules(db),
      deps.tokenSettings(),
      deps.channels(),
    ]);
    const settings: EngineSettings = {
      enabled: tokens.topUpEnabled,
      currency: tokens.currency,
      tokensPerCredit: tokens.tokensPerCredit,
      tokenValueCents: tokens.tokenValueCents,
      tokenValueTokens: tokens.tokenValueTokens,
      gatewayFeeBp: settingsRow.gatewayFeeBp,
      vatBp: settingsRow.vatBp,
      profitBp: settingsRow.profitBp,
      profitFloorBp: settingsRow.profitFloorBp,
      maxDiscountBp: settingsRow.maxDiscountBp,
      roundToCents: settingsRow.roundToCents,
      minOrderCents: settingsRow.minOrderCents,
      maxOrderCents: settingsRow.maxOrderCents,
    };
    return { settings, settingsRow, components: componentRows.map((row) => engineComponent(row, tokens)), ruleRows, channels };
  }

  async function customerOf(userId: string | null | undefined) {
    if (!userId) return null;
    const [createdAt, paid] = await Promise.all([deps.accountCreatedAt(userId), orders.paidOrders(userId)]);
    return createdAt ? { accountCreatedAt: createdAt, firstTopUp: paid === 0 } : null;
  }

  async function quote(request: QuoteRequest): Promise<Quote> {
    const [ctx, customer, usage] = await Promise.all([pricingContext(), customerOf(request.userId), orders.ruleUsage(request.userId ?? null)]);
    return quoteTopUp({
      settings: ctx.settings,
      components: ctx.components,
      rules: ctx.ruleRows.map(toEngineRule),
      channels: ctx.channels,
      selection: request.selection,
      customer,
      channel: request.channel ?? null,
      usage,
      now: clock.now(),
    });
  }

  const orders = createOrders({ db, clock, ports: deps.orderPorts, quote: (userId, selection, channel) => quote({ userId, selection, channel }) });

  // The terms the wallet reads on its hot path, often inside its own transaction where it may not wait for a query:
  // `peek`, with a dropped copy reloaded at once (after a change on any instance, NOTIFY `cache_topup_terms`, or a
  // reconnect) and an expired one answered while it is reloaded.
  const termsCache = createInvalidatingCache<TopUpTerms>({
    name: 'topup_terms',
    bus: deps.events,
    ttlMs: TERMS_TTL_MS,
    reloadDropped: true,
    onBackgroundError: deps.onBackgroundError,
    load: async () => {
      const [settingsRow, credits, tokens] = await Promise.all([loadSettings(db), admin.creditsTerms(), deps.tokenSettings()]);
      return {
        tokensPerCredit: tokens.tokensPerCredit,
        creditsMinUnits: credits?.minUnits ?? 1,
        creditsStep: credits?.step ?? 1,
        lowBalanceThresholdTokens: settingsRow.lowBalanceThresholdTokens,
      };
    },
  });

  /** The cached terms now (no I/O); a stale or missing copy is refreshed in the background. */
  const peekTerms = (): TopUpTerms | null => termsCache.peek(TERMS) ?? null;

  // Runs after the change committed: a failed NOTIFY must not fail it (other instances catch up within the TTL).
  const termsChanged = (): Promise<void> => termsCache.changed(TERMS).catch(() => undefined);

  const admin = createTopUpAdmin({ db, clock, onChanged: termsChanged, paymentSummaries: deps.paymentSummaries });

  return {
    async seed() {
      await seedTopUp(db, clock.now());
      await termsCache.get(TERMS);
    },

    /** Rules, components, settings and orders for operators (`/v1/admin/topup/*`); every change audited. */
    admin,
    /** The terms the wallet's answers use (cached; `peekTerms` never waits for I/O). */
    terms: async (): Promise<TopUpTerms> => termsCache.peek(TERMS) ?? termsCache.get(TERMS),
    peekTerms,
    /** Credit pricing changed elsewhere (the catalog): cached terms are re-read on every instance. */
    termsChanged,
    /**
     * The QUOTA_WARNING of a wallet a charge took under the threshold: the balance, the threshold and a suggested
     * top-up (enough credits to get back to the threshold, on the component's terms) to open the builder with.
     */
    lowBalanceNotice(balanceTokens: number, thresholdTokens: number) {
      const known = peekTerms();
      const suggestedTopUp = known ? { component: 'credits' as const, units: suggestedCredits(Math.max(1, thresholdTokens - balanceTokens), known) } : null;
      const credits = known ? ` (${(Math.floor((balanceTokens * 100) / known.tokensPerCredit) / 100).toLocaleString('en-US')} credits)` : '';
      return {
        type: 'QUOTA_WARNING' as const,
        title: 'Your credit balance is running low',
        body: `${balanceTokens.toLocaleString('en-US')} tokens${credits} left. Top up to keep generating${suggestedTopUp ? `: ${suggestedTopUp.units.toLocaleString('en-US')} credits would put you back above the warning level` : ''}.`,
        payload: { balanceTokens, thresholdTokens, suggestedTopUp, topUpOptions: '/v1/topup/options' },
      };
    },

    /** `{ component: 'credits', units }` for a wallet shortfall, or null before the terms are known. */
    suggestTopUp(shortfallTokens: number, known: TopUpTerms | null = peekTerms()): { component: 'credits'; units: number } | null {
      return known ? { component: 'credits', units: suggestedCredits(shortfallTokens, known) } : null;
    },

    /** `GET /v1/topup/options`: what the builder shows; prices are for display, the quote is what counts. */
    async options() {
      const ctx = await pricingContext();
      return {
        enabled: ctx.settings.enabled,
        currency: ctx.settings.currency,
        tokensPerCredit: ctx.settings.tokensPerCredit,
        minOrderCents: ctx.settings.minOrderCents,
        maxOrderCents: ctx.settings.maxOrderCents,
        roundToCents: ctx.settings.roundToCents,
        charsPer300Tokens: ctx.settingsRow.charsPer300Tokens,
        components: ctx.components
          .filter((c) => c.enabled)
          .map((c) => ({
            key: c.key,
            name: c.name,
            description: c.description,
            kind: c.kind,
            unit: c.unit,
            minUnits: c.minUnits,
            maxUnits: c.maxUnits,
            step: c.step,
            defaultUnits: c.defaultUnits,
            tokensPerUnit: c.tokensPerUnit,
            pricing:
              c.pricing.mode === 'TIERS'
                ? { mode: 'tiers' as const, tiers: [...c.pricing.tiers].sort((a, b) => a.minUnits - b.minUnits) }
                : {
                    mode: 'formula' as const,
                    unitPriceCents: c.pricing.mode === 'FIXED' ? c.pricing.unitPriceCents : Number(aiCostPrice(1, c.tokensPerUnit, ctx.settings)),
                  },
          })),
        offers: ctx.ruleRows.filter((r) => r.active).map(offerView),
        channels: ctx.channels
          .filter((c) => !(c.registeredAmountsOnly && c.amountsCents.length === 0))
          .map((c) => ({
            slug: c.slug,
            name: c.name,
            enabled: c.enabled,
            minAmountCents: c.minAmountCents,
            maxAmountCents: c.maxAmountCents,
            amountsCents: c.amountsCents,
          })),
      };
    },

    /**
     * `POST /v1/topup/quote`: prices a selection now. A signed-in customer unlocks first-top-up and new-account
     * offers; `channel` unlocks channel-only promotions; rule usage limits count paid orders.
     */
    quote,
    placeOrder: (userId: string, input: PlaceOrderInput) => orders.place(userId, input),
    getOrder: (userId: string, orderId: string) => orders.get(userId, orderId),
    listOrders: (userId: string, page: { limit: number; cursor?: string | undefined }) => orders.list(userId, page),
    /** The `topup` fulfilment payments runs when a top-up is paid. */
    fulfil: (tx: Tx, payment: ConfirmedTopUpPayment) => orders.fulfil(tx, payment),
  };
}

export type TopUpService = ReturnType<typeof createTopUpService>;
