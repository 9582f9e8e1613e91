import { describe, expect, it } from 'vitest';
import { budgetWithin, reasoningModeOf, thinkingMaxTokens, translateReasoning } from './reasoning.js';

const model = (flags: Record<string, unknown> = {}) => ({ slug: 'p/m', capabilities: { controls: {}, extra: {}, flags } });

describe('the reasoning control in each provider’s terms', () => {
  it('takes the mode from the catalog flag, only with the adapter that speaks it', () => {
    expect(reasoningModeOf(model({ reasoning: 'effort' }), 'openai')).toBe('effort');
    expect(reasoningModeOf(model({ reasoning: 'budget' }), 'anthropic')).toBe('budget');
    expect(reasoningModeOf(model({ reasoning: 'effort' }), 'anthropic')).toBeNull();
    expect(reasoningModeOf(model(), 'openai')).toBeNull();
    expect(reasoningModeOf(model({ reasoning: 'budget' }), 'local')).toBeNull();
  });

  it('turns an effort into a budget by the table, and none into no thinking', () => {
    const budget = model({ reasoning: 'budget' });
    expect(translateReasoning({ effort: 'minimal' }, 'budget', budget)).toEqual({ budgetTokens: 1024 });
    expect(translateReasoning({ effort: 'high' }, 'budget', budget)).toEqual({ budgetTokens: 24_576 });
    expect(translateReasoning({ effort: 'none' }, 'budget', budget)).toBeNull();
    expect(translateReasoning({ effort: 'low', budgetTokens: 5000 }, 'budget', budget)).toEqual({ budgetTokens: 5000 });
    expect(() => translateReasoning({ budgetTokens: 500 }, 'budget', budget)).toThrow(/at least 1024/);
  });

  it('turns a budget into the nearest effort at or above it, within the levels the provider takes', () => {
    expect(translateReasoning({ budgetTokens: 2048 }, 'effort', model())).toEqual({ effort: 'low' });
    expect(translateReasoning({ budgetTokens: 100_000 }, 'effort', model())).toEqual({ effort: 'high' });
    const xai = model({ reasoning: 'effort', reasoningEfforts: ['low', 'high'] });
    expect(translateReasoning({ effort: 'medium' }, 'effort', xai)).toEqual({ effort: 'high' });
    expect(translateReasoning({ effort: 'none' }, 'effort', xai)).toEqual({ effort: 'low' });
  });

  it('adds the budget to the answer’s room, within what the model writes', () => {
    expect(thinkingMaxTokens(8192, 2048, 64_000, model())).toBe(10_240);
    expect(thinkingMaxTokens(8192, 60_000, 64_000, model())).toBe(64_000);
    expect(() => thinkingMaxTokens(32_000, 100, 32_000, model())).toThrow(/no room/);
  });

  it("fits the budget under Anthropic's max_tokens: an effort's lowered, a caller's refused, none below 1024", () => {
    expect(budgetWithin(2048, false, 4000, model())).toEqual({ budgetTokens: 2048 });
    expect(budgetWithin(24_576, false, 4000, model())).toEqual({ budgetTokens: 3999 });
    expect(budgetWithin(24_576, false, 1025, model())).toEqual({ budgetTokens: 1024 });
    expect(budgetWithin(24_576, false, 1024, model())).toBeNull();
    expect(budgetWithin(3000, true, 3001, model())).toEqual({ budgetTokens: 3000 });
    expect(() => budgetWithin(3000, true, 3000, model())).toThrow(/below the 3000 output tokens/);
  });
});
