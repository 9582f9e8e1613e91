import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { quoteTopUp, aiCostPrice } from './engine/index.js';
import type { EngineChannel, EngineComponent, EngineSettings, Quote } from './engine/index.js';
import { createOrders, type ConfirmedTopUpPayment, type OrderPorts, type PlaceOrderInput } from './orders.js';
import { loadComponents, loadRules, loadSettings, seedTopUp, toEngineRule, type ComponentRow, type RuleRow } from './store.js';

/** The token settings owned by the catalog (credit size and token value). */
export interface TokenSettings {
  tokensPerCredit: number;
  tokenValueCents: number;
  tokenValueTokens: number;
  currency: string;
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
    const [settingsRow, componentRows, ruleRows, tokens, channels] = await Promise.all([loadSettings(db), loadComponents(db), loadRules(db), deps.tokenSettings(), deps.channels()]);
    const settings: EngineSettings = {
      enabled: settingsRow.enabled,
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

  return {
    seed: () => seedTopUp(db, clock.now()),

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
                : { mode: 'formula' as const, unitPriceCents: c.pricing.mode === 'FIXED' ? c.pricing.unitPriceCents : Number(aiCostPrice(1, c.tokensPerUnit, ctx.settings)) },
          })),
        offers: ctx.ruleRows.filter((r) => r.active).map(offerView),
        channels: ctx.channels
          .filter((c) => !(c.registeredAmountsOnly && c.amountsCents.length === 0))
          .map((c) => ({ slug: c.slug, name: c.name, enabled: c.enabled, minAmountCents: c.minAmountCents, maxAmountCents: c.maxAmountCents, amountsCents: c.amountsCents })),
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
