/**
 * How much the built-in model writes to follow a JSON schema (its tool arguments and structured answers). It builds
 * the value itself, on the event loop, so every dimension a caller controls is bounded: a schema that would need more
 * is refused before anything is reserved (see `localSchemaRefusal`), never cut short into an invalid value.
 */
export const LOCAL_SCHEMA_LIMITS = {
  /** One schema (a tool's parameters, or the response format's schema) as JSON. */
  schemaBytes: 32_768,
  /** Objects, arrays and scalars in one schema. */
  schemaNodes: 2_000,
  /** Nesting of one schema's JSON. */
  schemaDepth: 64,
  /** Nesting of the answer (objects and arrays inside each other, $refs followed). */
  depth: 12,
  /** $refs followed to resolve one schema, directly or through allOf/anyOf/oneOf (a $ref cycle never resolves). */
  refChain: 16,
  /** Values (objects, arrays, strings, numbers...) in one answer. */
  values: 1_000,
  /** Values of all a request's schemas together: every tool is checked, not only the one the answer calls. */
  requestValues: 10_000,
  /** minItems of one array. */
  minItems: 100,
  /** minLength of one string, in code points. */
  minLength: 4_096,
  /** The minLengths of all the answer's strings added up. */
  totalMinLength: 16_384,
  /** A `pattern`, in characters. */
  patternLength: 256,
} as const;

export type LocalSchemaLimit = keyof typeof LOCAL_SCHEMA_LIMITS;

/**
 * A schema the built-in model will not follow. `problem` says what the schema asks for and where, `remedy` which
 * limit holds and what to change; the gateway puts them in its 400.
 */
export class LocalSchemaLimitError extends Error {
  constructor(
    readonly limit: LocalSchemaLimit,
    readonly problem: string,
    readonly remedy: string,
  ) {
    super(`${problem}; ${remedy}`);
    this.name = 'LocalSchemaLimitError';
  }
}

/**
 * Bytes, nodes and nesting of a schema, checked before anything reads it recursively: the walk is iterative and stops
 * at the first limit passed, so even a body of arrays nested thousands deep costs no stack and little time.
 */
export function checkSchemaSize(schema: unknown): void {
  const { schemaNodes, schemaDepth, schemaBytes } = LOCAL_SCHEMA_LIMITS;
  const pending: Array<[unknown, number]> = [[schema, 1]];
  let nodes = 1;
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > schemaDepth)
      throw new LocalSchemaLimitError(
        'schemaDepth',
        `nests more than ${schemaDepth} levels deep`,
        `the built-in model reads at most ${schemaDepth} levels: flatten it`,
      );
    for (const key in node) {
      if (++nodes > schemaNodes)
        throw new LocalSchemaLimitError(
          'schemaNodes',
          `has more than ${schemaNodes} nodes (objects, arrays and values)`,
          `the built-in model reads at most ${schemaNodes}: shorten it`,
        );
      pending.push([(node as Record<string, unknown>)[key], depth + 1]);
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '');
  if (bytes > schemaBytes)
    throw new LocalSchemaLimitError('schemaBytes', `is ${bytes} bytes of JSON`, `the built-in model reads at most ${schemaBytes}: shorten it`);
}

/**
 * How far the built-in model goes to meet a `pattern` (best effort: past these it writes its usual text, which may not
 * match). They bound the work a pattern can cause; none refuses a request.
 */
export const LOCAL_PATTERN_BOUNDS = {
  /** States of the automaton a pattern compiles to (`\d{1,14}` is 29, `a{0,900}` too many). */
  states: 512,
  /** Prompt words longer than this are not tried against a pattern. */
  candidateLength: 64,
  /** Automaton steps for all the patterns of one answer together. */
  steps: 200_000,
} as const;
