import { BP, big, floorDiv, roundUpTo, toNumber } from './money.js';
import { scaledTokenCost } from './lines.js';
import type { AppliedRule, EngineComponent, EngineRule, EngineSettings, QuoteLine } from './types.js';

export interface Priced {
  applied: AppliedRule[];
  discountCents: number;
  amountCents: number;
  bonusTokens: number;
}

/** Highest priority first; ties by id so the same rules always combine the same way. */
export function byPriority(a: EngineRule, b: EngineRule): number {
  return b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Rules of one group do not stack: the first (highest priority) of each group stays; ungrouped rules all stay. */
export function onePerGroup(sorted: EngineRule[]): EngineRule[] {
  const seen = new Set<string>();
  return sorted.filter((rule) => {
    if (rule.group === null) return true;
    if (seen.has(rule.group)) return false;
    seen.add(rule.group);
    return true;
  });
}

/**
 * Applies `rules` (highest priority first) to the lines:
 * - BONUS_UNITS: units × the component's tokensPerUnit bonus tokens;
 * - EXTRA_TOKENS_PERCENT: floor(tokens × percent / 100) bonus tokens (of the bought tokens, never compounding);
 * - PERCENT_OFF: floor(subtotal × percent / 100), at most `maxDiscountCents`;
 * - FIXED_OFF: amountCents.
 * The total discount is capped at floor(subtotal × maxDiscountBp / 10,000); the excess is taken back from the
 * lowest-priority discounts first. amount = subtotal − discount, rounded up to `roundToCents`.
 */
export function priceWith(rules: EngineRule[], lines: QuoteLine[], components: EngineComponent[], settings: EngineSettings): Priced {
  const subtotal = lines.reduce((sum, line) => sum + big(line.priceCents), 0n);
  const tokens = lines.reduce((sum, line) => sum + big(line.tokens), 0n);
  const byKey = new Map(components.map((c) => [c.key, c]));
  const applied: AppliedRule[] = rules.map((rule) => {
    const effect = rule.effect;
    let discount = 0n;
    let bonus = 0n;
    switch (effect.type) {
      case 'BONUS_UNITS':
        bonus = big(effect.units) * big(byKey.get(effect.component)?.tokensPerUnit ?? 0);
        break;
      case 'EXTRA_TOKENS_PERCENT':
        bonus = floorDiv(tokens * big(effect.percent), 100n);
        break;
      case 'PERCENT_OFF':
        discount = floorDiv(subtotal * big(effect.percent), 100n);
        if (effect.maxDiscountCents != null && discount > big(effect.maxDiscountCents)) discount = big(effect.maxDiscountCents);
        break;
      case 'FIXED_OFF':
        discount = big(effect.amountCents);
        break;
    }
    return { id: rule.id, name: rule.name, type: rule.type, effect, discountCents: toNumber(discount), bonusTokens: toNumber(bonus) };
  });
  const cap = floorDiv(subtotal * big(settings.maxDiscountBp), BP);
  let total = applied.reduce((sum, a) => sum + big(a.discountCents), 0n);
  let excess = total > cap ? total - cap : 0n;
  for (let i = applied.length - 1; i >= 0 && excess > 0n; i--) {
    const entry = applied[i];
    if (!entry) continue;
    const cut = big(entry.discountCents) < excess ? big(entry.discountCents) : excess;
    entry.discountCents = toNumber(big(entry.discountCents) - cut);
    excess -= cut;
    total -= cut;
  }
  const amount = roundUpTo(subtotal - total, big(settings.roundToCents));
  const bonusTokens = applied.reduce((sum, a) => sum + a.bonusTokens, 0);
  return { applied, discountCents: toNumber(total), amountCents: toNumber(amount), bonusTokens };
}

/**
 * The profit floor: after the gateway fee and VAT, the amount still exceeds the AI cost of every token sold
 * (bonus included) by `profitFloorBp` of the amount:
 *   amount × (10,000 − gatewayFeeBp − vatBp − profitFloorBp) / 10,000 ≥ totalTokens × tokenValueCents / tokenValueTokens
 * checked cross-multiplied, in integers.
 */
export function meetsProfitFloor(amountCents: number, totalTokens: number, settings: EngineSettings): boolean {
  const keptBp = BP - big(settings.gatewayFeeBp) - big(settings.vatBp) - big(settings.profitFloorBp);
  return big(amountCents) * keptBp * big(settings.tokenValueTokens) >= scaledTokenCost(totalTokens, settings);
}

/** Drops the lowest-priority rule until the floor holds (or no rule is left). */
export function priceWithinFloor(rules: EngineRule[], lines: QuoteLine[], components: EngineComponent[], settings: EngineSettings): Priced {
  const tokens = lines.reduce((sum, line) => sum + line.tokens, 0);
  let chosen = rules;
  for (;;) {
    const priced = priceWith(chosen, lines, components, settings);
    if (chosen.length === 0 || meetsProfitFloor(priced.amountCents, tokens + priced.bonusTokens, settings)) return priced;
    chosen = chosen.slice(0, -1);
  }
}
