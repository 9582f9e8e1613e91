import { DEFAULT_COMPONENTS } from './defaults.js';
import { DEFAULT_ENGINE_SETTINGS } from './types.js';
import type { EngineChannel, EngineComponent, EngineRule, QuoteInput } from './types.js';

/** Shared by the engine's tests: default components with tokens per unit, and a rule builder. */
export const TOKENS_PER_UNIT: Record<string, number> = { credits: 10_000, images: 40_000, videos: 250_000, speech: 20_000, chat: 1_500 };

export function components(overrides: Partial<Record<string, Partial<EngineComponent>>> = {}): EngineComponent[] {
  return DEFAULT_COMPONENTS.map((c) => ({ ...c, tokensPerUnit: TOKENS_PER_UNIT[c.key] ?? 1, ...(overrides[c.key] ?? {}) }));
}

export const CHANNELS: EngineChannel[] = [
  { slug: 'card_regional', name: 'Card', enabled: true, minAmountCents: 1_000, maxAmountCents: 5_000_000, amountsCents: [], registeredAmountsOnly: false },
  { slug: 'dcb', name: 'Mobile balance', enabled: true, minAmountCents: 0, maxAmountCents: 5_000_000, amountsCents: [], registeredAmountsOnly: true },
];

let seq = 0;
export function rule(partial: Partial<EngineRule> & Pick<EngineRule, 'effect'>): EngineRule {
  seq += 1;
  return {
    id: `rule-${String(seq).padStart(4, '0')}`,
    name: `Rule ${seq}`,
    description: '',
    type: 'PROMOTION',
    active: true,
    priority: 0,
    group: null,
    conditions: {},
    ...partial,
  };
}

/** A Wednesday, 12:00 in Bangladesh. */
export const WEDNESDAY = new Date('2026-11-25T06:00:00Z');

export function input(partial: Partial<QuoteInput> = {}): QuoteInput {
  return {
    settings: DEFAULT_ENGINE_SETTINGS,
    components: components(),
    rules: [],
    channels: CHANNELS,
    selection: { credits: 1_000 },
    customer: null,
    channel: null,
    usage: {},
    now: WEDNESDAY,
    ...partial,
  };
}
