import { SAMPLE_CODE_POINTS, WORD, type CharTest } from './pattern-chars.js';
import { OutOfSteps, Parser, PROPERTY_PARSE_STEPS, spend, Unsupported, type Assertion, type Node, type PatternBudget } from './pattern-parse.js';
import { LOCAL_PATTERN_BOUNDS } from './schema-limits.js';

/**
 * A schema's `pattern`, honoured by the built-in model without ever running it on V8's backtracking engine, where
 * `^(a+)+$` takes exponential time on a few dozen characters that do not match.
 *
 * Why the work is bounded: the pattern is parsed (pattern-parse.ts: sequences, alternatives, repetitions,
 * assertions, classes), compiled here to a Thompson automaton of at most `states` states and simulated breadth-first
 * (Pike's VM). At each position of the text every state is visited at most once, so a test costs at most (length + 1) ×
 * states x (1 + class size) steps, whatever the nesting of quantifiers, and each step is charged: all the work of one
 * answer's patterns (parsing, compiling, testing, making a sample) shares one budget of `steps`; a test that runs out
 * counts as no match, a pattern whose compiling runs out is not honoured. Nothing depends on the clock, so the same
 * request gives the same answer. Lookarounds and backreferences have no automaton: such patterns are not honoured
 * either (best effort, like a pattern that neither a prompt word nor the generated sample meets).
 */

type Inst =
  | { op: 'char'; test: CharTest; cost: number; next: number }
  | { op: 'split'; first: number; second: number }
  | { op: 'assert'; at: Assertion; next: number }
  | { op: 'match' };

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

/**
 * Builds the program backwards from its end, each node compiled in front of what follows it. Repetitions are
 * unrolled, so `states` caps the program and `states` x 4 the compiling itself (`(?:){500}` unrolls to nothing).
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
