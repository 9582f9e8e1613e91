/** The top-up pricing engine: pure functions, no I/O, no clock (callers pass `now`). Formulas: docs/topup-pricing.md. */
export { quoteTopUp } from './quote.js';
export { aiCostPrice } from './lines.js';
export { meetsProfitFloor } from './combine.js';
export { bangladeshDayOfWeek } from './conditions.js';
export { payableChannels, formatMoney } from './channels.js';
export { DEFAULT_ENGINE_SETTINGS } from './types.js';
export { DEFAULT_COMPONENTS, RULE_TEMPLATES } from './defaults.js';
export type * from './types.js';
