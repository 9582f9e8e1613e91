import { compilePattern, type CompiledPattern } from './pattern.js';
import { patternBudget } from './pattern-parse.js';
import { capitalise, type PromptFacts } from './prompt-facts.js';
import { fitLength, formattedValue, isSchema, merge, numberWithin, typeOf, type Json, type Schema } from './schema-helpers.js';
import { checkSchemaSize, LOCAL_PATTERN_BOUNDS, LOCAL_SCHEMA_LIMITS as LIMITS, LocalSchemaLimitError } from './schema-limits.js';

/**
 * A JSON value valid against a JSON schema, with strings drawn from the prompt: the built-in model's tool arguments and
 * structured answers. Deterministic (no clock, no randomness). Covers what tool and response schemas use in practice:
 * objects (every required property, optional scalars too), arrays (minItems/maxItems, tuples, uniqueItems), strings
 * (length, the common formats, a pattern as far as pattern.ts can without backtracking), numbers within bounds and multipleOf, enum, const,
 * `$ref` within the schema, `allOf` merged, `anyOf`/`oneOf` first branch. Bounded by LOCAL_SCHEMA_LIMITS: a schema that
 * asks for more throws a LocalSchemaLimitError (`checkLocalSchema` finds it before the call is reserved).
 */

/** A property whose name or description is about a place gets a capitalised word of the prompt ("Paris"). */
const PLACE = /\b(cit(y|ies)|locations?|places?|towns?|countr(y|ies)|regions?|destinations?|origin|address(es)?|venues?)\b/i;
const nameWords = (name: string) => name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ');

/** Where in the answer a value goes, kept as a chain and spelled out (`/trip/stops/0`) only for an error. */
type Location = { parent: Location; key: string } | undefined;
const pointer = (at: Location): string => (at ? `${pointer(at.parent)}/${at.key.replace(/~/g, '~0').replace(/\//g, '~1')}` : '');
const where = (at: Location) => (at ? `at ${pointer(at)}` : 'at the top level');

interface Hint {
  name: string;
  description: string;
  /** The index of an item under uniqueItems (0 otherwise): values of different variants differ. */
  variant: number;
  unique?: boolean;
  at: Location;
}

/** A property the object gets: its schema, or the type to use for a required name that has none. */
type Planned = { name: string; schema: unknown; required: boolean; fallbackType?: string };

const EMPTY: Schema = Object.freeze({});

export function schemaInstance(schema: Schema, facts: PromptFacts): Json {
  checkSchemaSize(schema);
  return new InstanceGenerator(schema, facts).instance();
}

const NO_FACTS: PromptFacts = { phrase: '', capitalised: [], numbers: [] };

/** The values the checks of one request have walked, over all its schemas. */
export interface RequestTally {
  values: number;
}

/**
 * Throws the LocalSchemaLimitError the schema's instance would meet, without writing the instance: the same walk,
 * with strings left empty and patterns unread, so its cost is the limits' and not the prompt's. Which limits an
 * instance meets does not depend on the prompt (strings and numbers never add structure). `tally` adds up the
 * request's schemas, so checking 128 tools stays within `requestValues`.
 */
export function checkLocalSchema(schema: Schema, tally: RequestTally = { values: 0 }): void {
  checkSchemaSize(schema);
  new InstanceGenerator(schema, NO_FACTS, tally).instance();
}

class InstanceGenerator {
  private placesTaken = 0;
  private values = 0;
  private minLengths = 0;
  /** Each schema object is resolved, merged and planned once, however many values it makes. */
  private readonly normalised = new Map<object, Schema>();
  private readonly plans = new Map<Schema, Planned[]>();
  /** Whether a property name, or a description, is about a place: names and descriptions may be long and repeat. */
  private readonly placeNames = new Map<string, boolean>();
  private readonly placeDescriptions = new Map<string, boolean>();
  private readonly patterns = new Map<string, CompiledPattern | undefined>();
  private readonly patternBudget = patternBudget();

  constructor(
    private readonly root: Schema,
    private readonly facts: PromptFacts,
    /** Set when checking the limits only (`checkLocalSchema`): strings stay empty and numbers 0. */
    private readonly tally?: RequestTally,
  ) {}

  private get measureOnly(): boolean {
    return this.tally !== undefined;
  }

  instance(): Json {
    return this.value(this.root, { name: '', description: '', variant: 0, at: undefined }, 0, 'object');
  }

  private value(raw: unknown, hint: Hint, depth: number, fallbackType?: string): Json {
    if (++this.values > LIMITS.values) {
      throw new LocalSchemaLimitError(
        'values',
        `needs more than ${LIMITS.values} values (objects, arrays, strings, numbers) in one answer`,
        'that is the most the built-in model writes: lower minItems or require fewer properties',
      );
    }
    if (this.tally && ++this.tally.values > LIMITS.requestValues) {
      throw new LocalSchemaLimitError(
        'requestValues',
        `need more than ${LIMITS.requestValues} values together`,
        'the built-in model checks at most that many per request: send fewer or smaller tools',
      );
    }
    const schema = this.normalise(raw, hint.at);
    if ('const' in schema) return schema.const as Json;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[hint.variant % schema.enum.length] as Json;
    const described = (): Hint => ({ ...hint, description: typeof schema.description === 'string' ? schema.description : hint.description });
    switch (typeOf(schema) ?? fallbackType) {
      case 'object':
        return depth > LIMITS.depth ? this.cutShort(schema, {}, hint.at) : this.object(schema, hint, depth);
      case 'array':
        return depth > LIMITS.depth ? this.cutShort(schema, [], hint.at) : this.array(schema, described(), depth);
      case 'integer':
        return this.number(schema, true, hint);
      case 'number':
        return this.number(schema, false, hint);
      case 'boolean':
        return hint.variant % 2 === 0;
      case 'null':
        return null;
      default:
        return this.string(schema, described());
    }
  }

  /**
   * An object or array past the depth limit: empty when that is valid (an optional tree ends there), null when the
   * schema allows it. Otherwise it never ends: a required property, or an array's minimum item, refers back to its
   * own schema (or the nesting is real and deeper than the limit).
   */
  private cutShort(schema: Schema, empty: Json, at: Location): Json {
    const fits = Array.isArray(empty)
      ? !(typeof schema.minItems === 'number' && schema.minItems > 0) && !isSchema(schema.contains)
      : this.plan(schema, at).every((p) => !p.required);
    if (fits) return empty;
    if (Array.isArray(schema.type) && schema.type.includes('null')) return null;
    throw new LocalSchemaLimitError(
      'depth',
      `nests deeper than ${LIMITS.depth} levels ${where(at)}`,
      'the built-in model writes at most that many: make the property or array that refers back to its own schema optional or nullable, or flatten the schema',
    );
  }

  /** `$ref` resolved, `allOf` merged and the first branch of `anyOf`/`oneOf` merged into the schema. */
  private normalise(raw: unknown, at: Location, refs = 0): Schema {
    if (!isSchema(raw)) return EMPTY;
    const known = this.normalised.get(raw);
    if (known) return known;
    let schema: Schema = raw;
    while (typeof schema.$ref === 'string') {
      if (++refs > LIMITS.refChain) {
        throw new LocalSchemaLimitError(
          'refChain',
          `follows more than ${LIMITS.refChain} $refs in a row ${where(at)} (a $ref cycle?)`,
          'the built-in model follows at most that many: point each $ref at the schema itself',
        );
      }
      const { $ref, ...siblings } = schema;
      schema = merge(this.resolve($ref), siblings);
    }
    if (Array.isArray(schema.allOf)) {
      const { allOf, ...rest } = schema;
      schema = (allOf as unknown[]).reduce<Schema>((merged, part) => merge(merged, this.normalise(part, at, refs)), rest);
    }
    for (const key of ['oneOf', 'anyOf'] as const) {
      const branches = schema[key];
      if (!Array.isArray(branches) || branches.length === 0) continue;
      const { [key]: _branches, ...rest } = schema;
      // Under oneOf an optional property could make a second branch match too: only the required ones then.
      schema = { ...merge(rest, this.normalise(branches[0], at, refs)), ...(key === 'oneOf' ? { 'x-required-only': true } : {}) };
    }
    this.normalised.set(raw, schema);
    return schema;
  }

  private resolve(ref: string): Schema {
    if (!ref.startsWith('#')) return {};
    let node: unknown = this.root;
    for (const raw of ref.slice(1).split('/').filter(Boolean)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      node = isSchema(node) && Object.hasOwn(node, key) ? node[key] : undefined;
    }
    return isSchema(node) ? node : {};
  }

  /**
   * The properties an object gets: every required one, and optional scalars unless the schema wants only the required
   * (oneOf, maxProperties) or they take part in a dependency.
   */
  private plan(schema: Schema, at: Location): Planned[] {
    const known = this.plans.get(schema);
    if (known) return known;
    const properties = isSchema(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : []);
    const dependents = new Set(
      Object.keys({ ...(isSchema(schema.dependentRequired) ? schema.dependentRequired : {}), ...(isSchema(schema.dependencies) ? schema.dependencies : {}) }),
    );
    const requiredOnly = schema['x-required-only'] === true || typeof schema.maxProperties === 'number';
    const plan: Planned[] = [];
    for (const [name, property] of Object.entries(properties)) {
      if (required.has(name) || (!requiredOnly && !dependents.has(name) && this.isScalar(property, { parent: at, key: name })))
        plan.push({ name, schema: property, required: required.has(name) });
    }
    const extra = isSchema(schema.additionalProperties) ? schema.additionalProperties : EMPTY;
    for (const name of required) if (!Object.hasOwn(properties, name)) plan.push({ name, schema: extra, fallbackType: 'string', required: true });
    this.plans.set(schema, plan);
    return plan;
  }

  /** `variant` (an item's index under uniqueItems) reaches the properties, so such items differ. */
  private object(schema: Schema, { variant, unique, at }: Hint, depth: number): Json {
    const out: { [key: string]: Json } = {};
    for (const { name, schema: property, fallbackType } of this.plan(schema, at)) {
      const value = this.value(property, { name, description: '', variant, unique, at: { parent: at, key: name } }, depth + 1, fallbackType);
      // An own property even when the name is `__proto__`.
      if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
      else out[name] = value;
    }
    return out;
  }

  private isScalar(property: unknown, at: Location): boolean {
    const schema = this.normalise(property, at);
    if ('const' in schema || Array.isArray(schema.enum)) return true;
    const type = typeOf(schema);
    return type === 'string' || type === 'number' || type === 'integer' || type === 'boolean';
  }

  private array(schema: Schema, hint: Hint, depth: number): Json {
    const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
    if (min > LIMITS.minItems) {
      throw new LocalSchemaLimitError(
        'minItems',
        `asks for an array of at least ${min} items ${where(hint.at)}`,
        `the built-in model writes at most ${LIMITS.minItems} items per array: lower minItems`,
      );
    }
    const max = typeof schema.maxItems === 'number' ? schema.maxItems : Number.POSITIVE_INFINITY;
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
    const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
    const count = Math.min(Math.max(min, 1, isSchema(schema.contains) ? 1 : 0), max);
    const item = (i: number): Hint => ({
      ...hint,
      variant: schema.uniqueItems ? i : 0,
      unique: schema.uniqueItems === true,
      at: { parent: hint.at, key: String(i) },
    });
    const out: Json[] = [];
    for (let i = 0; i < Math.min(tuple.length, max); i++) out.push(this.value(tuple[i], item(i), depth + 1));
    for (let i = out.length; i < count; i++) out.push(this.value(i === 0 && isSchema(schema.contains) ? schema.contains : rest, item(i), depth + 1));
    return out;
  }

  private number(schema: Schema, integer: boolean, hint: Hint): number {
    return this.measureOnly ? 0 : numberWithin(schema, integer, hint, this.facts.numbers);
  }

  private string(schema: Schema, hint: Hint): string {
    this.checkMinLength(schema, hint.at);
    const pattern = typeof schema.pattern === 'string' ? this.pattern(schema.pattern, hint.at) : undefined;
    if (this.measureOnly) return '';
    const suffix = hint.variant > 0 ? ` ${hint.variant + 1}` : '';
    const formatted = formattedValue(typeof schema.format === 'string' ? schema.format : '', hint.variant, this.facts);
    if (formatted !== undefined) return formatted;
    const place = this.aboutPlace(this.placeNames, nameWords, hint.name) || this.aboutPlace(this.placeDescriptions, (d) => d, hint.description);
    const facts = this.facts;
    const preferred = place ? this.place(hint.variant) : `${facts.phrase}${suffix}`;
    if (!pattern) return fitLength(preferred, schema);
    // Best effort: a word of the prompt that matches, else a short text made from the pattern, else the usual text.
    const candidates = [
      preferred,
      ...facts.capitalised,
      ...facts.phrase.split(' '),
      ...facts.numbers.map(String),
      'a',
      'A',
      '1',
      'a1',
      'A1',
      'abc',
      'ABC',
      '123',
    ];
    const sampleLength = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY, LOCAL_PATTERN_BOUNDS.candidateLength);
    return fitLength(candidates.find((c) => pattern.test(c)) ?? pattern.sample(sampleLength) ?? preferred, schema);
  }

  private checkMinLength(schema: Schema, at: Location): void {
    const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
    if (min > LIMITS.minLength) {
      throw new LocalSchemaLimitError(
        'minLength',
        `asks for a string of at least ${min} characters ${where(at)}`,
        `the built-in model writes at most ${LIMITS.minLength} per string: lower minLength`,
      );
    }
    this.minLengths += Math.max(0, Math.min(min, typeof schema.maxLength === 'number' ? schema.maxLength : min));
    if (this.minLengths > LIMITS.totalMinLength) {
      throw new LocalSchemaLimitError(
        'totalMinLength',
        `asks for more than ${LIMITS.totalMinLength} characters of strings in all (their minLength added up)`,
        'that is the most the built-in model writes: lower minLength or minItems',
      );
    }
  }

  /** The compiled pattern, once per answer; none when measuring only (a pattern never adds to the limits met). */
  private pattern(source: string, at: Location): CompiledPattern | undefined {
    if (source.length > LIMITS.patternLength) {
      throw new LocalSchemaLimitError(
        'patternLength',
        `has a pattern of ${source.length} characters ${where(at)}`,
        `the built-in model takes patterns of at most ${LIMITS.patternLength}: shorten it`,
      );
    }
    if (this.measureOnly) return undefined;
    if (!this.patterns.has(source)) this.patterns.set(source, compilePattern(source, this.patternBudget));
    return this.patterns.get(source);
  }

  private aboutPlace(seen: Map<string, boolean>, words: (text: string) => string, text: string): boolean {
    let known = seen.get(text);
    if (known === undefined) seen.set(text, (known = PLACE.test(words(text))));
    return known;
  }

  /** Each place property takes the next capitalised word of the prompt ("from Paris to Lisbon"). */
  private place(variant: number): string {
    const { capitalised, phrase } = this.facts;
    const next = capitalised[this.placesTaken++];
    if (next) return next;
    const first = capitalised[0] ?? capitalise(phrase.split(' ')[0]!);
    return variant > 0 ? `${first} ${variant + 1}` : first;
  }
}
