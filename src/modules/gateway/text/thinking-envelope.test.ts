import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ThinkingBlock } from '../providers/types.js';
import { isPackedThinking, packThinking, unpackThinking } from './thinking-envelope.js';

const block = fc.oneof(
  fc.record({ type: fc.constant('thinking' as const), thinking: fc.string(), signature: fc.string() }),
  fc.record({ type: fc.constant('redacted_thinking' as const), data: fc.string() }),
);

describe('thinking envelope', () => {
  it('gives back exactly the blocks it packed, in order, whatever their text', () => {
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 5 }), (blocks: ThinkingBlock[]) => {
        const packed = packThinking(blocks)!;
        expect(isPackedThinking(packed)).toBe(true);
        expect(packed).toMatch(/^sfth1\.[A-Za-z0-9_-]*$/);
        expect(unpackThinking(packed, 'field')).toEqual(blocks);
      }),
    );
  });

  it('packs nothing for no blocks, and keeps only the fields a provider needs', () => {
    expect(packThinking(undefined)).toBeUndefined();
    expect(packThinking([])).toBeUndefined();
    const extra = { type: 'thinking', thinking: 'Step one.', signature: 'sig_1', cache_control: { type: 'ephemeral' } } as ThinkingBlock;
    expect(unpackThinking(packThinking([extra])!, 'f')).toEqual([{ type: 'thinking', thinking: 'Step one.', signature: 'sig_1' }]);
  });

  it('refuses, naming the field, a value it did not write or one that was cut or edited', () => {
    const packed = packThinking([{ type: 'thinking', thinking: 'Step one.', signature: 'sig_1' }])!;
    const wrong = [
      'gAAAAABn-an-openai-encrypted-blob',
      packed.slice(0, -4),
      `sfth1.${Buffer.from('[]').toString('base64url')}`,
      `sfth1.${Buffer.from('[{"type":"thinking","thinking":"x"}]').toString('base64url')}`,
      `sfth1.${Buffer.from('{"type":"thinking"}').toString('base64url')}`,
      'sfth1.%%%',
    ];
    for (const value of wrong) {
      expect(() => unpackThinking(value, 'input[2].encrypted_content'), value).toThrow(
        expect.objectContaining({ statusCode: 400, details: [expect.objectContaining({ field: 'input[2].encrypted_content' })] }),
      );
    }
    expect(isPackedThinking('CiQB0e2Kb-a-gemini-signature')).toBe(false);
  });
});
