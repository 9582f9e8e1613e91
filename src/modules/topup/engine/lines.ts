import { BP, big, ceilDiv, toNumber } from './money.js';
import type { EngineComponent, EngineSettings, QuoteIssue, QuoteLine } from './types.js';

/**
 * AI-cost price of `units` units, exact and rounded up once per line:
 *   cost  = units × tokensPerUnit × tokenValueCents / tokenValueTokens
 *   price = ceil(cost × 10,000 / (10,000 − gatewayFeeBp − vatBp − profitBp))
 * With the defaults the sell price is cost / 0.40: 5% gateway, 15% VAT and 40% profit are shares of the price.
 */
export function aiCostPrice(units: number, tokensPerUnit: number, settings: EngineSettings): bigint {
  const keptBp = BP - big(settings.gatewayFeeBp) - big(settings.vatBp) - big(settings.profitBp);
  if (keptBp <= 0n) throw new RangeError('gateway fee, VAT and profit must leave part of the price for the AI cost');
  const numerator = big(units) * big(tokensPerUnit) * big(settings.tokenValueCents) * BP;
  return ceilDiv(numerator, big(settings.tokenValueTokens) * keptBp);
}

/** The AI cost of `tokens` wallet tokens, scaled by `tokenValueTokens × 10,000` so it stays an exact integer. */
export function scaledTokenCost(tokens: number, settings: EngineSettings): bigint {
  return big(tokens) * big(settings.tokenValueCents) * BP;
}

function priceLine(
  component: EngineComponent,
  units: number,
  settings: EngineSettings,
): { priceCents: bigint; unitPriceCents: number; tierMinUnits: number | null } {
  const pricing = component.pricing;
  if (pricing.mode === 'FIXED') return { priceCents: big(units) * big(pricing.unitPriceCents), unitPriceCents: pricing.unitPriceCents, tierMinUnits: null };
  if (pricing.mode === 'TIERS') {
    const tiers = [...pricing.tiers].sort((a, b) => a.minUnits - b.minUnits);
    let tier = tiers[0];
    if (!tier) throw new RangeError(`component ${component.key} has no price tiers`);
    for (const candidate of tiers) if (candidate.minUnits <= units) tier = candidate;
    return { priceCents: big(units) * big(tier.unitPriceCents), unitPriceCents: tier.unitPriceCents, tierMinUnits: tier.minUnits };
  }
  // Shown per unit rounded up; the line itself is priced exactly and rounded once.
  return {
    priceCents: aiCostPrice(units, component.tokensPerUnit, settings),
    unitPriceCents: toNumber(aiCostPrice(1, component.tokensPerUnit, settings)),
    tierMinUnits: null,
  };
}

const formatUnits = (n: number): string => n.toLocaleString('en-US');

/** Checks the selection (rule 1: 0 omits a component; otherwise within min..max and a multiple of step) and prices the valid lines. */
export function buildLines(
  components: EngineComponent[],
  selection: Record<string, number>,
  settings: EngineSettings,
): { lines: QuoteLine[]; issues: QuoteIssue[] } {
  const byKey = new Map(components.map((c) => [c.key, c]));
  const lines: QuoteLine[] = [];
  const issues: QuoteIssue[] = [];
  for (const key of Object.keys(selection).sort()) {
    const units = selection[key] ?? 0;
    const component = byKey.get(key);
    if (!component) {
      issues.push({ field: key, message: `"${key}" is not a top-up component. Choose from the components in GET /v1/topup/options.` });
      continue;
    }
    if (!Number.isSafeInteger(units) || units < 0) {
      issues.push({ field: key, message: `${component.name}: enter a whole number of ${component.unit}s.` });
      continue;
    }
    if (units === 0) continue;
    if (!component.enabled) {
      issues.push({ field: key, message: `${component.name} is not on sale right now; remove it from the top-up.` });
      continue;
    }
    if (units < component.minUnits || units > component.maxUnits) {
      issues.push({
        field: key,
        message: `${component.name}: choose between ${formatUnits(component.minUnits)} and ${formatUnits(component.maxUnits)} ${component.unit}s.`,
      });
      continue;
    }
    if (units % component.step !== 0) {
      issues.push({ field: key, message: `${component.name}: choose a number of ${component.unit}s in steps of ${formatUnits(component.step)}.` });
      continue;
    }
    const priced = priceLine(component, units, settings);
    lines.push({
      key,
      name: component.name,
      kind: component.kind,
      unit: component.unit,
      units,
      tokensPerUnit: component.tokensPerUnit,
      tokens: units * component.tokensPerUnit,
      unitPriceCents: priced.unitPriceCents,
      priceCents: toNumber(priced.priceCents),
      tierMinUnits: priced.tierMinUnits,
    });
  }
  return { lines, issues };
}
