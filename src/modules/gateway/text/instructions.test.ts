import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cleanEnhanced, enhanceInstruction, normaliseTarget, withServerInstruction } from './instructions.js';
import { fitHistory } from './prepare.js';
import { countMessageTokens, countTextTokens, messageTokensAtMost } from './tokens.js';
import type { ChatMessage } from '../providers/types.js';

const conversation: ChatMessage[] = [
  { role: 'user', content: 'Hi' },
  { role: 'system', content: 'Be terse.' },
  { role: 'assistant', content: 'Hello' },
  { role: 'user', content: 'Explain tides' },
];
const text = { type: 'TEXT', capabilities: { flags: { streaming: true, systemMessage: true } } };

describe('withServerInstruction', () => {
  it("puts the per-type instruction first, then the caller's system messages, then the conversation in order", () => {
    const messages = withServerInstruction(text, conversation);
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'user']);
    expect(messages[0]!.content).toMatch(/helpful, accurate assistant/);
    expect(messages[1]!.content).toBe('Be terse.');
    expect(withServerInstruction({ ...text, type: 'MULTIMODAL' }, conversation)[0]!.content).toMatch(/multimodal/);
  });

  it("gives no instruction to models that take none, keeping the caller's system message", () => {
    const messages = withServerInstruction({ type: 'TEXT', capabilities: { flags: { serverInstruction: false } } }, conversation);
    expect(messages[0]).toEqual({ role: 'system', content: 'Be terse.' });
    expect(messages).toHaveLength(4);
  });

  it('folds system text into the first user turn for models without a system role', () => {
    const messages = withServerInstruction({ type: 'TEXT', capabilities: { flags: { systemMessage: false } } }, conversation);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[0]!.content).toMatch(/^You are a helpful[\s\S]*\n\nBe terse\.\n\nHi$/);
  });
});

describe('prompt enhancement helpers', () => {
  it('defaults the target to text and reads bare audio as speech', () => {
    expect(normaliseTarget(undefined)).toBe('text');
    expect(normaliseTarget('audio')).toBe('audio.speech');
    expect(normaliseTarget('audio.music')).toBe('audio.music');
  });

  it('names the target and its guidance in the instruction', () => {
    expect(enhanceInstruction('audio.speech')).toMatch(/target "audio\.speech".*no stage directions/);
    expect(enhanceInstruction('image')).toMatch(/lighting, style and mood/);
  });

  it.each([
    ['"A red fox at dawn"', 'A red fox at dawn'],
    ['Improved prompt: A red fox at dawn', 'A red fox at dawn'],
    ['  “A red fox”  ', 'A red fox'],
    ["A fox's den", "A fox's den"],
  ])('cleans %j to the bare prompt', (raw, clean) => {
    expect(cleanEnhanced(raw)).toBe(clean);
  });
});

describe('fitHistory', () => {
  const long = (i: number): ChatMessage => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${'word '.repeat(200)}` });

  it('drops the oldest turns beyond the budget, never system text or the last message', () => {
    const messages: ChatMessage[] = [{ role: 'system', content: 'Rules.' }, ...Array.from({ length: 10 }, (_, i) => long(i))];
    const { messages: kept, trimmed } = fitHistory(messages, 700);
    expect(kept[0]).toEqual({ role: 'system', content: 'Rules.' });
    expect(kept.at(-1)).toEqual(messages.at(-1));
    expect(trimmed).toBeGreaterThan(0);
    expect(countMessageTokens(kept.slice(1))).toBeLessThanOrEqual(700 + 3);
    expect(kept.slice(1)).toEqual(messages.slice(1 + trimmed));
  });

  it('keeps everything without counting when the byte bound fits, and the bound is never below the real count', () => {
    const short = conversation.filter((m) => m.role !== 'system');
    expect(fitHistory(conversation, messageTokensAtMost(short))).toEqual({ messages: [conversation[1], ...short], trimmed: 0 });
    const message = fc.record({ role: fc.constantFrom('user' as const, 'assistant' as const), content: fc.string({ unit: 'grapheme', maxLength: 300 }) });
    fc.assert(
      fc.property(fc.array(message, { maxLength: 6 }), (messages) => {
        const perMessage = messages.reduce((sum, m) => sum + countMessageTokens([m]), 0);
        expect(messageTokensAtMost(messages)).toBeGreaterThanOrEqual(perMessage);
      }),
      { numRuns: 200 },
    );
  });

  it('counts a message text the same the first time and when it comes again (a replayed history)', () => {
    const turn = { role: 'user', content: `A question about lighthouses, number ${Math.random()}` } satisfies ChatMessage;
    const expected = 3 + 3 + countTextTokens('user') + countTextTokens(turn.content);
    expect(countMessageTokens([turn])).toBe(expected);
    expect(countMessageTokens([turn])).toBe(expected);
    expect(countMessageTokens([turn, turn])).toBe(2 * expected - 3);
  });

  it('keeps a single last message even when it alone is over the budget', () => {
    const { messages, trimmed } = fitHistory([long(0), long(1), long(2)], 10);
    expect(messages).toEqual([long(2)]);
    expect(trimmed).toBe(2);
  });
});
