import type { EngineComponent, EngineRule } from './types.js';

/** The components on offer by default; `tokensPerUnit` comes from the token settings and the catalog at quote time. */
export const DEFAULT_COMPONENTS: Omit<EngineComponent, 'tokensPerUnit'>[] = [
  { key: 'credits', name: 'Credits', description: 'Credits for any model, kept in your wallet.', kind: 'CREDITS', unit: 'credit', enabled: true, minUnits: 50, maxUnits: 20_000, step: 10, defaultUnits: 500, pricing: { mode: 'AI_COST' } },
  { key: 'images', name: 'Images', description: 'Image generations.', kind: 'MODEL_USAGE', unit: 'image', enabled: false, minUnits: 5, maxUnits: 1_000, step: 5, defaultUnits: 20, pricing: { mode: 'AI_COST' } },
  { key: 'videos', name: 'Videos', description: 'Video generations, in five-second clips.', kind: 'MODEL_USAGE', unit: '5-second clip', enabled: false, minUnits: 1, maxUnits: 200, step: 1, defaultUnits: 5, pricing: { mode: 'AI_COST' } },
  { key: 'speech', name: 'Speech', description: 'Text read aloud, per thousand characters.', kind: 'MODEL_USAGE', unit: '1,000 characters', enabled: false, minUnits: 1, maxUnits: 5_000, step: 1, defaultUnits: 10, pricing: { mode: 'AI_COST' } },
  { key: 'chat', name: 'Chat replies', description: 'Chat replies of a typical length.', kind: 'MODEL_USAGE', unit: 'reply', enabled: false, minUnits: 10, maxUnits: 100_000, step: 10, defaultUnits: 100, pricing: { mode: 'AI_COST' } },
];

/** The four rule templates; all start switched off (an operator switches them on). */
export const RULE_TEMPLATES: (Omit<EngineRule, 'id'> & { key: string })[] = [
  {
    key: 'volume-1000',
    name: 'Volume bonus: 50 credits',
    description: '50 bonus credits with 1,000 credits or more.',
    type: 'BONUS',
    active: false,
    priority: 10,
    group: 'volume',
    effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 },
    conditions: { minUnits: { component: 'credits', units: 1_000 } },
  },
  {
    key: 'volume-5000',
    name: 'Volume bonus: 400 credits',
    description: '400 bonus credits with 5,000 credits or more.',
    type: 'BONUS',
    active: false,
    priority: 20,
    group: 'volume',
    effect: { type: 'BONUS_UNITS', component: 'credits', units: 400 },
    conditions: { minUnits: { component: 'credits', units: 5_000 } },
  },
  {
    key: 'weekend-extra',
    name: 'Weekend extra credits',
    description: '10% extra credits on Fridays and Saturdays (Bangladesh time).',
    type: 'PROMOTION',
    active: false,
    priority: 5,
    group: null,
    effect: { type: 'EXTRA_TOKENS_PERCENT', percent: 10 },
    conditions: { daysOfWeek: [5, 6] },
  },
  {
    key: 'first-topup',
    name: 'First top-up bonus',
    description: '100 bonus credits on your first top-up.',
    type: 'BONUS',
    active: false,
    priority: 30,
    group: 'welcome',
    effect: { type: 'BONUS_UNITS', component: 'credits', units: 100 },
    conditions: { audience: 'FIRST_TOPUP', oncePerCustomer: true },
  },
];
