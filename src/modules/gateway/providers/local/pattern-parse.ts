import { ANY_BUT_NEWLINE, DIGIT, not, property, SPACE, WORD, type CharTest } from './pattern-chars.js';
import { LOCAL_PATTERN_BOUNDS } from './schema-limits.js';

/** The parsing half of pattern.ts (which explains the engine): a pattern's tree, and the budget its work draws on. */

export type Assertion = 'start' | 'end' | 'boundary' | 'not-boundary';

export type Node =
  | { kind: 'char'; test: CharTest; cost: number; codePoint?: number }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'alt'; options: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number }
  | { kind: 'assert'; at: Assertion };

/** The work left for an answer's patterns, and the Unicode properties it has used. */
export interface PatternBudget {
  steps: number;
  properties: Set<string>;
}

export const patternBudget = (): PatternBudget => ({ steps: LOCAL_PATTERN_BOUNDS.steps, properties: new Set() });

/**
 * A Unicode property costs this much once per answer, whether or not an earlier answer already made its RegExp (so an
 * answer does not depend on what came before): about ten distinct properties fit in the budget.
 */
const PROPERTY_STEPS = 20_000;
/** V8 builds a property's ranges while it parses a pattern (~40 us for `\p{L}`, ~150 us in a class): charged first. */
export const PROPERTY_PARSE_STEPS = 5_000;

export class Unsupported extends Error {}
export class OutOfSteps extends Error {}

export function spend(budget: PatternBudget, steps = 1): void {
  budget.steps -= steps;
  if (budget.steps < 0) throw new OutOfSteps();
}

const single = (codePoint: number): Node => ({ kind: 'char', test: (cp) => cp === codePoint, cost: 1, codePoint });

/** An escape's meaning: one code point, or a class of them. */
type Escaped = { codePoint: number } | { test: CharTest };

/** A recursive-descent parser of the `u` syntax, over code points; the depth of its recursion is the pattern's nesting. */
export class Parser {
  private at = 0;

  constructor(
    private readonly chars: readonly string[],
    private readonly budget: PatternBudget,
  ) {}

  parse(): Node {
    const node = this.alternatives();
    if (this.at < this.chars.length) throw new Unsupported();
    return node;
  }

  private alternatives(): Node {
    const options = [this.sequence()];
    while (this.chars[this.at] === '|') {
      this.at++;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0]! : { kind: 'alt', options };
  }

  private sequence(): Node {
    const items: Node[] = [];
    while (this.at < this.chars.length && this.chars[this.at] !== '|' && this.chars[this.at] !== ')') items.push(this.quantified(this.term()));
    return { kind: 'seq', items };
  }

  private term(): Node {
    spend(this.budget);
    const c = this.chars[this.at++]!;
    switch (c) {
      case '^':
        return { kind: 'assert', at: 'start' };
      case '$':
        return { kind: 'assert', at: 'end' };
      case '.':
        return { kind: 'char', test: ANY_BUT_NEWLINE, cost: 1 };
      case '(':
        return this.group();
      case '[':
        return this.characterClass();
      case '\\': {
        const next = this.chars[this.at];
        if (next === 'b' || next === 'B') {
          this.at++;
          return { kind: 'assert', at: next === 'b' ? 'boundary' : 'not-boundary' };
        }
        // Backreferences match what a group captured: no automaton has that.
        if (next === 'k' || (next !== undefined && next >= '1' && next <= '9')) throw new Unsupported();
        const escaped = this.escape(false);
        return 'codePoint' in escaped ? single(escaped.codePoint) : { kind: 'char', test: escaped.test, cost: 1 };
      }
      default:
        return single(c.codePointAt(0)!);
    }
  }

  private group(): Node {
    if (this.chars[this.at] === '?') {
      const kind = this.chars[this.at + 1];
      const named = kind === '<' && this.chars[this.at + 2] !== '=' && this.chars[this.at + 2] !== '!';
      // Lookarounds, and modifiers like (?i:...), are beyond the automaton.
      if (kind !== ':' && !named) throw new Unsupported();
      this.at = named ? this.chars.indexOf('>', this.at) + 1 : this.at + 2;
    }
    const inner = this.alternatives();
    if (this.chars[this.at++] !== ')') throw new Unsupported();
    return inner;
  }

  /** `[...]`: in `u` syntax classes do not nest, and a range joins two single code points. */
  private characterClass(): Node {
    const negated = this.chars[this.at] === '^';
    if (negated) this.at++;
    const parts: CharTest[] = [];
    while (this.at < this.chars.length && this.chars[this.at] !== ']') {
      spend(this.budget);
      const from = this.classAtom();
      if (this.chars[this.at] === '-' && this.chars[this.at + 1] !== ']' && 'codePoint' in from) {
        this.at++;
        const to = this.classAtom();
        if (!('codePoint' in to)) throw new Unsupported();
        parts.push((cp) => cp >= from.codePoint && cp <= to.codePoint);
      } else {
        parts.push('codePoint' in from ? (cp) => cp === from.codePoint : from.test);
      }
    }
    this.at++;
    const test: CharTest = (cp) => parts.some((part) => part(cp));
    return { kind: 'char', test: negated ? not(test) : test, cost: Math.max(1, parts.length) };
  }

  private classAtom(): Escaped {
    const c = this.chars[this.at++]!;
    return c === '\\' ? this.escape(true) : { codePoint: c.codePointAt(0)! };
  }

  /** After a `\` (`\b` is a backspace only in a class; outside, the caller took it as an assertion). */
  private escape(inClass: boolean): Escaped {
    const c = this.chars[this.at++]!;
    switch (c) {
      case 'd':
        return { test: DIGIT };
      case 'D':
        return { test: not(DIGIT) };
      case 'w':
        return { test: WORD };
      case 'W':
        return { test: not(WORD) };
      case 's':
        return { test: SPACE };
      case 'S':
        return { test: not(SPACE) };
      case 'p':
      case 'P': {
        const name = this.braced();
        if (!this.budget.properties.has(name)) {
          spend(this.budget, PROPERTY_STEPS);
          this.budget.properties.add(name);
        }
        return { test: c === 'p' ? property(name) : not(property(name)) };
      }
      case 'f':
        return { codePoint: 0x0c };
      case 'n':
        return { codePoint: 0x0a };
      case 'r':
        return { codePoint: 0x0d };
      case 't':
        return { codePoint: 0x09 };
      case 'v':
        return { codePoint: 0x0b };
      case '0':
        return { codePoint: 0 };
      case 'b':
        if (inClass) return { codePoint: 0x08 };
        throw new Unsupported();
      case 'c':
        return { codePoint: this.chars[this.at++]!.codePointAt(0)! % 32 };
      case 'x':
        return { codePoint: this.hex(2) };
      case 'u':
        return { codePoint: this.unicodeEscape() };
      default:
        // `\.`, `\/`, `\-` and the other identity escapes
        return { codePoint: c.codePointAt(0)! };
    }
  }

  private braced(): string {
    const end = this.chars.indexOf('}', this.at);
    const text = this.chars.slice(this.at + 1, end).join('');
    this.at = end + 1;
    return text;
  }

  private hex(digits: number): number {
    const value = Number.parseInt(this.chars.slice(this.at, this.at + digits).join(''), 16);
    this.at += digits;
    return value;
  }

  /** `\u{1F600}`, `\u00e9`, and a surrogate pair `\uD83D\uDE00`, which `u` syntax reads as one code point. */
  private unicodeEscape(): number {
    if (this.chars[this.at] === '{') return Number.parseInt(this.braced(), 16);
    const unit = this.hex(4);
    if (unit >= 0xd800 && unit <= 0xdbff && this.chars[this.at] === '\\' && this.chars[this.at + 1] === 'u' && this.chars[this.at + 2] !== '{') {
      const low = Number.parseInt(this.chars.slice(this.at + 2, this.at + 6).join(''), 16);
      if (low >= 0xdc00 && low <= 0xdfff) {
        this.at += 6;
        return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
      }
    }
    return unit;
  }

  private quantified(node: Node): Node {
    const c = this.chars[this.at];
    let min: number;
    let max: number;
    if (c === '*' || c === '+' || c === '?') {
      this.at++;
      [min, max] = c === '*' ? [0, Infinity] : c === '+' ? [1, Infinity] : [0, 1];
    } else if (c === '{') {
      const [low, high] = this.braced().split(',');
      min = Number(low);
      max = high === undefined ? min : high === '' ? Infinity : Number(high);
    } else {
      return node;
    }
    if (this.chars[this.at] === '?') this.at++; // lazy or greedy: the same set of matches
    return { kind: 'repeat', node, min, max };
  }
}
