import { ANY_BUT_NEWLINE, DIGIT, not, property, SAMPLE_CODE_POINTS, SPACE, WORD, type CharTest } from './local-pattern-chars.js';
import { LOCAL_PATTERN_BOUNDS } from './local-schema-limits.js';

/**
 * A schema's `pattern`, honoured by the built-in model without ever running it on V8's backtracking engine, where
 * `^(a+)+$` takes exponential time on a few dozen characters that do not match.
 *
 * Why the work is bounded: the pattern is parsed here (sequences, alternatives, repetitions, assertions, classes),
 * compiled to a Thompson automaton of at most `states` states and simulated breadth-first (Pike's VM). At each position
 * of the text every state is visited at most once, so a test costs at most (length + 1) × states × (1 + class size)
 * steps, whatever the nesting of quantifiers, and each step is charged: all the work of one answer's patterns (parsing,
 * compiling, testing, making a sample) shares one budget of `steps`; a test that runs out counts as no match, a pattern
 * whose compiling runs out is not honoured. Nothing depends on the clock, so the same request gives the same answer.
 * Lookarounds and backreferences have no automaton: such patterns are not honoured either (best effort, like a pattern
 * that neither a prompt word nor the generated sample meets).
 */

type Assertion = 'start' | 'end' | 'boundary' | 'not-boundary';

type Node =
  | { kind: 'char'; test: CharTest; cost: number; codePoint?: number }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'alt'; options: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number }
  | { kind: 'assert'; at: Assertion };

type Inst =
  | { op: 'char'; test: CharTest; cost: number; next: number }
  | { op: 'split'; first: number; second: number }
  | { op: 'assert'; at: Assertion; next: number }
  | { op: 'match' };

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
/** V8 builds a property's ranges while it parses a pattern (~40 µs for `\p{L}`, ~150 µs in a class): charged first. */
const PROPERTY_PARSE_STEPS = 5_000;

class Unsupported extends Error {}
class OutOfSteps extends Error {}

function spend(budget: PatternBudget, steps = 1): void {
  budget.steps -= steps;
  if (budget.steps < 0) throw new OutOfSteps();
}

function outOfSteps<T>(attempt: () => T, otherwise: T): T {
  try {
    return attempt();
  } catch (err) {
    if (err instanceof OutOfSteps) return otherwise;
    throw err;
  }
}

export interface CompiledPattern {
  /** Whether the text contains a match (as `RegExp.test`); false when it is too long to try or the budget ran out. */
  test(text: string): boolean;
  /** A short text the pattern matches, when one is easy to make. */
  sample(maxLength: number): string | undefined;
}

/**
 * The pattern compiled, or undefined when it is invalid (as a `u` regexp), not one this engine honours, or the
 * budget ran out.
 */
export function compilePattern(pattern: string, budget: PatternBudget): CompiledPattern | undefined {
  try {
    spend(budget, PROPERTY_PARSE_STEPS * (pattern.match(/\\[pP]\{/g)?.length ?? 0));
    // Only parsed, never run: V8 checks the syntax here, so the parser below can trust it.
    new RegExp(pattern, 'u');
    const tree = new Parser([...pattern], budget).parse();
    const program = new Compiler(budget).program(tree);
    // The same words are tried for each string of an answer: each is run once.
    const results = new Map<string, boolean>();
    const test = (text: string) => {
      let result = results.get(text);
      if (result === undefined) {
        const input = Array.from(text, (c) => c.codePointAt(0)!);
        result = input.length <= LOCAL_PATTERN_BOUNDS.candidateLength && outOfSteps(() => run(program, input, budget), false);
        results.set(text, result);
      }
      return result;
    };
    const samples = new Map<number, string | undefined>();
    return {
      test,
      sample(maxLength) {
        if (!samples.has(maxLength)) {
          const text = outOfSteps(() => sampleOf(tree, maxLength, budget), undefined);
          samples.set(maxLength, text !== undefined && test(text) ? text : undefined);
        }
        return samples.get(maxLength);
      },
    };
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof Unsupported || err instanceof OutOfSteps) return undefined;
    throw err;
  }
}

const single = (codePoint: number): Node => ({ kind: 'char', test: (cp) => cp === codePoint, cost: 1, codePoint });

/** An escape's meaning: one code point, or a class of them. */
type Escaped = { codePoint: number } | { test: CharTest };

/** A recursive-descent parser of the `u` syntax, over code points; the depth of its recursion is the pattern's nesting. */
class Parser {
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
      // Lookarounds, and modifiers like (?i:…), are beyond the automaton.
      if (kind !== ':' && !named) throw new Unsupported();
      this.at = named ? this.chars.indexOf('>', this.at) + 1 : this.at + 2;
    }
    const inner = this.alternatives();
    if (this.chars[this.at++] !== ')') throw new Unsupported();
    return inner;
  }

  /** `[…]`: in `u` syntax classes do not nest, and a range joins two single code points. */
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

/**
 * Builds the program backwards from its end, each node compiled in front of what follows it. Repetitions are
 * unrolled, so `states` caps the program and `states` × 4 the compiling itself (`(?:){500}` unrolls to nothing).
 */
class Compiler {
  private readonly insts: Inst[] = [];
  private work = 0;

  constructor(private readonly budget: PatternBudget) {}

  program(tree: Node): { insts: Inst[]; start: number } {
    const start = this.compile(tree, this.push({ op: 'match' }));
    return { insts: this.insts, start };
  }

  private push(inst: Inst): number {
    if (this.insts.length >= LOCAL_PATTERN_BOUNDS.states) throw new Unsupported();
    this.insts.push(inst);
    return this.insts.length - 1;
  }

  private compile(node: Node, next: number): number {
    if (++this.work > LOCAL_PATTERN_BOUNDS.states * 4) throw new Unsupported();
    spend(this.budget);
    switch (node.kind) {
      case 'char':
        return this.push({ op: 'char', test: node.test, cost: node.cost, next });
      case 'assert':
        return this.push({ op: 'assert', at: node.at, next });
      case 'seq':
        return node.items.reduceRight((after, item) => this.compile(item, after), next);
      case 'alt': {
        const starts = node.options.map((option) => this.compile(option, next));
        return starts.slice(0, -1).reduceRight((rest, first) => this.push({ op: 'split', first, second: rest }), starts.at(-1)!);
      }
      case 'repeat': {
        const { min, max } = node;
        if (min > LOCAL_PATTERN_BOUNDS.states || (max !== Infinity && max > LOCAL_PATTERN_BOUNDS.states)) throw new Unsupported();
        let tail = next;
        if (max === Infinity) {
          const loop = this.push({ op: 'split', first: -1, second: next });
          (this.insts[loop] as Extract<Inst, { op: 'split' }>).first = this.compile(node.node, loop);
          tail = loop;
        } else {
          for (let i = min; i < max; i++) tail = this.push({ op: 'split', first: this.compile(node.node, tail), second: tail });
        }
        for (let i = 0; i < min; i++) tail = this.compile(node.node, tail);
        return tail;
      }
    }
  }
}

function holds(at: Assertion, input: readonly number[], pos: number): boolean {
  switch (at) {
    case 'start':
      return pos === 0;
    case 'end':
      return pos === input.length;
    default: {
      const before = pos > 0 && WORD(input[pos - 1]!);
      const boundary = before !== (pos < input.length && WORD(input[pos]!));
      return at === 'boundary' ? boundary : !boundary;
    }
  }
}

/** Pike's VM, without captures: whether a match starts anywhere in `input` (so a start thread joins at each position). */
function run({ insts, start }: { insts: Inst[]; start: number }, input: readonly number[], budget: PatternBudget): boolean {
  const seen = new Int32Array(insts.length).fill(-1);
  /** Adds the states reached from `pc` without reading (splits followed, assertions checked), each once per position. */
  const add = (threads: number[], pc: number, pos: number) => {
    const pending = [pc];
    while (pending.length > 0) {
      const at = pending.pop()!;
      if (seen[at] === pos) continue;
      seen[at] = pos;
      spend(budget);
      const inst = insts[at]!;
      if (inst.op === 'split') pending.push(inst.second, inst.first);
      else if (inst.op === 'assert') {
        if (holds(inst.at, input, pos)) pending.push(inst.next);
      } else threads.push(at);
    }
  };
  let threads: number[] = [];
  for (let pos = 0; pos <= input.length; pos++) {
    add(threads, start, pos);
    const next: number[] = [];
    for (const pc of threads) {
      const inst = insts[pc]!;
      if (inst.op === 'match') return true;
      if (inst.op !== 'char' || pos === input.length) continue;
      spend(budget, inst.cost);
      if (inst.test(input[pos]!)) add(next, inst.next, pos + 1);
    }
    threads = next;
  }
  return false;
}

/**
 * The shortest text the tree spells (each repetition at its minimum, the first alternative that works); undefined past
 * `maxLength` or when a class has no sample. Assertions are left to the test that checks the result.
 */
function sampleOf(node: Node, maxLength: number, budget: PatternBudget): string | undefined {
  switch (node.kind) {
    case 'char': {
      const codePoint =
        node.codePoint ??
        SAMPLE_CODE_POINTS.find((cp) => {
          spend(budget, node.cost);
          return node.test(cp);
        });
      return codePoint === undefined ? undefined : String.fromCodePoint(codePoint);
    }
    case 'assert':
      return '';
    case 'seq': {
      let text = '';
      for (const item of node.items) {
        const part = sampleOf(item, maxLength - text.length, budget);
        if (part === undefined) return undefined;
        text += part;
      }
      return text.length <= maxLength ? text : undefined;
    }
    case 'alt':
      for (const option of node.options) {
        const text = sampleOf(option, maxLength, budget);
        if (text !== undefined) return text;
      }
      return undefined;
    case 'repeat': {
      if (node.min === 0) return '';
      const once = sampleOf(node.node, maxLength, budget);
      return once !== undefined && once.length * node.min <= maxLength ? once.repeat(node.min) : undefined;
    }
  }
}
