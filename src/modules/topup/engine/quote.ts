import { payableChannels, formatMoney } from './channels.js';
import { byPriority, onePerGroup, priceWithinFloor } from './combine.js';
import { unmetConditions } from './conditions.js';
import { buildLines } from './lines.js';
import { creditsOf } from './money.js';
import type { EngineRule, Quote, QuoteInput, QuoteIssue, QuoteOffer } from './types.js';

const NO_USAGE = { total: 0, byCustomer: 0 };

/**
 * Prices a top-up selection. Pure and deterministic: the same input always gives the same quote. Never throws for a
 * bad selection: it answers `valid: false` with `issues`.
 */
export function quoteTopUp(input: QuoteInput): Quote {
  const { settings, components, selection } = input;
  const { lines, issues: lineIssues } = buildLines(components, selection, settings);
  const issues: QuoteIssue[] = [];
  if (!settings.enabled) issues.push({ field: 'enabled', message: 'Top-ups are switched off right now. Please try again later.' });
  issues.push(...lineIssues);
  if (lines.length === 0 && lineIssues.length === 0) issues.push({ field: 'selection', message: 'Choose at least one item to top up.' });

  const subtotalCents = lines.reduce((sum, line) => sum + line.priceCents, 0);
  const tokens = lines.reduce((sum, line) => sum + line.tokens, 0);

  const eligible: EngineRule[] = [];
  const nearMisses: { rule: EngineRule; offer: QuoteOffer }[] = [];
  for (const rule of input.rules.filter((r) => r.active).sort(byPriority)) {
    const usage = input.usage[rule.id] ?? NO_USAGE;
    const unmet = unmetConditions(rule, { lines, subtotalCents, customer: input.customer, channel: input.channel, usage, now: input.now });
    const only = unmet[0];
    if (unmet.length === 0) eligible.push(rule);
    else if (unmet.length === 1 && only?.requirement)
      nearMisses.push({ rule, offer: { id: rule.id, name: rule.name, type: rule.type, requirement: only.requirement } });
  }
  const priced = priceWithinFloor(onePerGroup(eligible), lines, components, settings);
  const appliedIds = new Set(priced.applied.map((a) => a.id));
  const appliedRules = eligible.filter((rule) => appliedIds.has(rule.id));
  // An offer is worth showing only if meeting it would not be beaten by a rule of its group already applied.
  const offers = nearMisses
    .filter(({ rule }) => rule.group === null || !appliedRules.some((a) => a.group === rule.group && byPriority(a, rule) < 0))
    .map(({ offer }) => offer);

  if (lines.length > 0 && lineIssues.length === 0) {
    const money = (cents: number) => formatMoney(cents, settings.currency);
    if (priced.amountCents < settings.minOrderCents) {
      issues.push({
        field: 'amount',
        message: `The smallest top-up is ${money(settings.minOrderCents)}; this one comes to ${money(priced.amountCents)}. Add more to continue.`,
      });
    } else if (priced.amountCents > settings.maxOrderCents) {
      issues.push({
        field: 'amount',
        message: `The largest top-up is ${money(settings.maxOrderCents)}; this one comes to ${money(priced.amountCents)}. Choose less to continue.`,
      });
    }
  }
  const valid = issues.length === 0;
  const channels = valid ? payableChannels(input.channels, priced.amountCents, settings.currency) : { payableWith: [], unavailableChannels: [] };
  const totalTokens = tokens + priced.bonusTokens;
  const usageLines = lines.filter((line) => line.kind === 'MODEL_USAGE');
  const tokensSpent = usageLines.reduce((sum, line) => sum + line.tokens, 0);
  const tpc = settings.tokensPerCredit;
  return {
    valid,
    issues,
    currency: settings.currency,
    lines,
    subtotalCents,
    discountCents: priced.discountCents,
    amountCents: priced.amountCents,
    tokens,
    bonusTokens: priced.bonusTokens,
    totalTokens,
    credits: creditsOf(tokens, tpc),
    bonusCredits: creditsOf(priced.bonusTokens, tpc),
    totalCredits: creditsOf(totalTokens, tpc),
    applied: priced.applied,
    offers,
    ...channels,
    usage: {
      items: usageLines.map((line) => ({ displayName: line.name, unit: line.unit, units: line.units })),
      tokensSpent,
      tokensLeft: totalTokens - tokensSpent,
    },
  };
}
