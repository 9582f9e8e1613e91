import { createHash } from 'node:crypto';
import { STOP_WORDS, topicWords } from './local-answers.js';

/**
 * A JSON value valid against a JSON schema, with strings drawn from the prompt: the built-in model's tool arguments and
 * structured answers. Deterministic (no clock, no randomness). Covers what tool and response schemas use in practice:
 * objects (every required property, optional scalars too), arrays (minItems/maxItems, tuples, uniqueItems), strings
 * (length, pattern when a candidate fits, the common formats), numbers within bounds and multipleOf, enum, const,
 * `$ref` within the schema, `allOf` merged, `anyOf`/`oneOf` first branch.
 */
type Schema = Record<string, unknown>;
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What the prompt offers for string and number values. */
export interface PromptFacts {
  phrase: string;
  capitalised: string[];
  numbers: number[];
  email?: string;
  url?: string;
  date?: string;
}

const QUESTION_WORDS = new Set([...STOP_WORDS, 'i', 'is', 'are', 'can', 'how', 'who', 'why', 'the', 'a', 'an', 'show', 'find', 'get', 'list', 'book', 'check', 'look', 'search', 'send', 'let', 'do', 'does', 'will', 'hello', 'hi', 'hey']);

export function promptFacts(prompt: string): PromptFacts {
  const capitalised: string[] = [];
  const sentenceStarts: string[] = [];
  for (const match of prompt.matchAll(/(^|[.!?]\s+|\s)(\p{Lu}[\p{L}'-]*)/gu)) {
    const word = match[2]!.replace(/'s$/, '');
    if (QUESTION_WORDS.has(word.toLowerCase()) || word.length < 2) continue;
    const atSentenceStart = match.index === 0 || /[.!?]/.test(match[1]!);
    const list = atSentenceStart ? sentenceStarts : capitalised;
    if (!list.includes(word)) list.push(word);
  }
  // Then lower-case places ("weather in oslo": the word after a preposition), then capitalised sentence starts.
  for (const match of prompt.matchAll(/\b(?:in|at|to|from|near)\s+(\p{L}[\p{L}'-]{2,})/giu)) {
    const word = capitalise(match[1]!.toLowerCase());
    if (!QUESTION_WORDS.has(match[1]!.toLowerCase()) && !capitalised.includes(word)) capitalised.push(word);
  }
  capitalised.push(...sentenceStarts.filter((w) => !capitalised.includes(w)));
  const words = topicWords(prompt, 4);
  return {
    phrase: words.join(' ') || prompt.replace(/\s+/g, ' ').trim().slice(0, 40) || 'example',
    capitalised,
    numbers: (prompt.match(/(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])/g) ?? []).map(Number).filter(Number.isFinite),
    email: /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/.exec(prompt)?.[0],
    url: /https?:\/\/[^\s"'<>]+/.exec(prompt)?.[0]?.replace(/[.,;:!?)]+$/, ''),
    date: /\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b/.exec(prompt)?.[0],
  };
}

/** A property whose name or description is about a place gets a capitalised word of the prompt ("Paris"). */
const PLACE = /\b(cit(y|ies)|locations?|places?|towns?|countr(y|ies)|regions?|destinations?|origin|address(es)?|venues?)\b/i;
const nameWords = (name: string) => name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ');
const MAX_DEPTH = 12;

interface Hint {
  name: string;
  description: string;
  /** The index of an item under uniqueItems (0 otherwise): values of different variants differ. */
  variant: number;
  unique?: boolean;
}

export function schemaInstance(schema: Schema, facts: PromptFacts): Json {
  const generator = new InstanceGenerator(schema, facts);
  return generator.value(schema, { name: '', description: '', variant: 0 }, 0, 'object');
}

class InstanceGenerator {
  private placesTaken = 0;

  constructor(
    private readonly root: Schema,
    private readonly facts: PromptFacts,
  ) {}

  value(raw: unknown, hint: Hint, depth: number, fallbackType?: string): Json {
    const schema = this.normalise(raw, depth);
    if ('const' in schema) return schema.const as Json;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[hint.variant % schema.enum.length] as Json;
    const described: Hint = { ...hint, description: typeof schema.description === 'string' ? schema.description : hint.description };
    switch (typeOf(schema) ?? fallbackType) {
      case 'object':
        return depth > MAX_DEPTH ? {} : this.object(schema, hint, depth);
      case 'array':
        return depth > MAX_DEPTH ? [] : this.array(schema, described, depth);
      case 'integer':
        return this.number(schema, true, hint);
      case 'number':
        return this.number(schema, false, hint);
      case 'boolean':
        return hint.variant % 2 === 0;
      case 'null':
        return null;
      default:
        return this.string(schema, described);
    }
  }

  /** `$ref` resolved, `allOf` merged and the first branch of `anyOf`/`oneOf` merged into the schema. */
  private normalise(raw: unknown, depth: number): Schema {
    let schema: Schema = isSchema(raw) ? raw : {};
    for (let hops = 0; typeof schema.$ref === 'string' && hops < MAX_DEPTH; hops++) {
      const { $ref, ...siblings } = schema;
      schema = merge(this.resolve($ref), siblings);
    }
    if (Array.isArray(schema.allOf)) {
      const { allOf, ...rest } = schema;
      schema = (allOf as unknown[]).reduce<Schema>((merged, part) => merge(merged, this.normalise(part, depth + 1)), rest);
    }
    for (const key of ['oneOf', 'anyOf'] as const) {
      const branches = schema[key];
      if (!Array.isArray(branches) || branches.length === 0) continue;
      const { [key]: _branches, ...rest } = schema;
      // Under oneOf an optional property could make a second branch match too: only the required ones then.
      schema = { ...merge(rest, this.normalise(branches[0], depth + 1)), ...(key === 'oneOf' ? { 'x-required-only': true } : {}) };
    }
    return schema;
  }

  private resolve(ref: string): Schema {
    if (!ref.startsWith('#')) return {};
    let node: unknown = this.root;
    for (const raw of ref.slice(1).split('/').filter(Boolean)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      node = isSchema(node) ? node[key] : undefined;
    }
    return isSchema(node) ? node : {};
  }

  /** `variant` (an item's index under uniqueItems) reaches the properties, so such items differ. */
  private object(schema: Schema, { variant, unique }: Hint, depth: number): Json {
    const properties = isSchema(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const dependents = new Set(Object.keys({ ...(isSchema(schema.dependentRequired) ? schema.dependentRequired : {}), ...(isSchema(schema.dependencies) ? schema.dependencies : {}) }));
    const requiredOnly = schema['x-required-only'] === true || typeof schema.maxProperties === 'number';
    const out: { [key: string]: Json } = {};
    for (const [name, property] of Object.entries(properties)) {
      const include = required.has(name) || (!requiredOnly && !dependents.has(name) && this.isScalar(property, depth));
      if (include) out[name] = this.value(property, { name, description: '', variant, unique }, depth + 1);
    }
    const extra = isSchema(schema.additionalProperties) ? schema.additionalProperties : {};
    for (const name of required) if (!(name in out)) out[name] = this.value(extra, { name, description: '', variant, unique }, depth + 1, 'string');
    return out;
  }

  private isScalar(property: unknown, depth: number): boolean {
    const schema = this.normalise(property, depth + 1);
    if ('const' in schema || Array.isArray(schema.enum)) return true;
    const type = typeOf(schema);
    return type === 'string' || type === 'number' || type === 'integer' || type === 'boolean';
  }

  private array(schema: Schema, hint: Hint, depth: number): Json {
    const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
    const max = typeof schema.maxItems === 'number' ? schema.maxItems : Number.POSITIVE_INFINITY;
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
    const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
    const count = Math.min(Math.max(min, 1, isSchema(schema.contains) ? 1 : 0), max);
    const out: Json[] = [];
    for (let i = 0; i < Math.min(tuple.length, max); i++) out.push(this.value(tuple[i], { ...hint, variant: schema.uniqueItems ? i : 0, unique: schema.uniqueItems === true }, depth + 1));
    for (let i = out.length; i < count; i++) {
      const item = i === 0 && isSchema(schema.contains) ? schema.contains : rest;
      out.push(this.value(item, { ...hint, variant: schema.uniqueItems ? i : 0, unique: schema.uniqueItems === true }, depth + 1));
    }
    return out;
  }

  private number(schema: Schema, integer: boolean, { variant, unique }: Hint): number {
    const legacyExclusive = (bound: unknown, flag: unknown) => (flag === true && typeof bound === 'number' ? bound : undefined);
    const min = typeof schema.minimum === 'number' ? schema.minimum : Number.NEGATIVE_INFINITY;
    const max = typeof schema.maximum === 'number' ? schema.maximum : Number.POSITIVE_INFINITY;
    const exMin = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : legacyExclusive(schema.minimum, schema.exclusiveMinimum);
    const exMax = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : legacyExclusive(schema.maximum, schema.exclusiveMaximum);
    const multipleOf = typeof schema.multipleOf === 'number' && schema.multipleOf > 0 ? schema.multipleOf : undefined;
    const step = multipleOf ?? 1;
    const fits = (n: number) =>
      Number.isFinite(n) &&
      n >= min &&
      n <= max &&
      (exMin === undefined || n > exMin) &&
      (exMax === undefined || n < exMax) &&
      (!integer || Number.isInteger(n)) &&
      (multipleOf === undefined || Number.isInteger(n / multipleOf));
    const round = (n: number) => Number(n.toPrecision(12));
    const snapUp = (n: number) => (multipleOf === undefined && !integer ? n : round(Math.ceil(n / step) * step));
    const snapDown = (n: number) => (multipleOf === undefined && !integer ? n : round(Math.floor(n / step) * step));
    const low = Math.max(min, exMin ?? Number.NEGATIVE_INFINITY);
    const high = Math.min(max, exMax ?? Number.POSITIVE_INFINITY);
    const fromLow = [snapUp(low), snapUp(low) + step].map((n) => round(n + variant * step));
    const fromHigh = [snapDown(high), snapDown(high) - step].map((n) => round(n - variant * step));
    const middle = [snapUp((low + high) / 2), (low + high) / 2];
    // Items that must differ walk up from the lower bound (or down from the upper one); a lone value prefers the prompt's.
    const candidates = unique
      ? [...(Number.isFinite(low) ? fromLow : Number.isFinite(high) ? fromHigh : [round((1 + variant) * step)])]
      : [...this.facts.numbers, 1, 0, ...fromLow, ...fromHigh, ...middle];
    return candidates.find(fits) ?? (Number.isFinite(low) ? low : Number.isFinite(high) ? high : 0);
  }

  private string(schema: Schema, hint: Hint): string {
    const suffix = hint.variant > 0 ? ` ${hint.variant + 1}` : '';
    const formatted = this.formatted(typeof schema.format === 'string' ? schema.format : '', hint.variant);
    if (formatted !== undefined) return formatted;
    const place = PLACE.test(nameWords(hint.name)) || PLACE.test(hint.description);
    const facts = this.facts;
    const preferred = place ? this.place(hint.variant) : `${facts.phrase}${suffix}`;
    const pattern = typeof schema.pattern === 'string' ? safeRegExp(schema.pattern) : undefined;
    const candidates = [preferred, ...facts.capitalised, ...facts.phrase.split(' '), ...facts.numbers.map(String), 'a', 'A', '1', 'a1', 'A1', 'abc', 'ABC', '123'];
    const value = pattern ? (candidates.find((c) => pattern.test(c)) ?? preferred) : preferred;
    return fitLength(value, schema);
  }

  /** Each place property takes the next capitalised word of the prompt ("from Paris to Lisbon"). */
  private place(variant: number): string {
    const { capitalised, phrase } = this.facts;
    const next = capitalised[this.placesTaken++];
    if (next) return next;
    const first = capitalised[0] ?? capitalise(phrase.split(' ')[0]!);
    return variant > 0 ? `${first} ${variant + 1}` : first;
  }

  private formatted(format: string, variant: number): string | undefined {
    const n = variant > 0 ? String(variant + 1) : '';
    const date = this.facts.date ?? '2025-01-01';
    switch (format) {
      case 'date':
        return date;
      case 'date-time':
        return `${date}T12:00:00Z`;
      case 'time':
        return '12:00:00Z';
      case 'email':
        return variant === 0 && this.facts.email ? this.facts.email : `user${n}@example.com`;
      case 'uri':
      case 'url':
      case 'iri':
      case 'uri-reference':
      case 'iri-reference':
        return variant === 0 && this.facts.url ? this.facts.url : `https://example.com/${n}`;
      case 'hostname':
        return `host${n}.example.com`;
      case 'ipv4':
        return `192.0.2.${1 + (variant % 254)}`;
      case 'ipv6':
        return `2001:db8::${(1 + variant).toString(16)}`;
      case 'uuid': {
        const hex = createHash('sha256').update(`${this.facts.phrase}\u0000${variant}`).digest('hex');
        return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
      }
      default:
        return undefined;
    }
  }
}

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  if (Array.isArray(type)) return (type.find((t) => t !== 'null') ?? type[0]) as string | undefined;
  if (typeof type === 'string') return type;
  if ('properties' in schema || 'required' in schema || 'additionalProperties' in schema) return 'object';
  if ('items' in schema || 'prefixItems' in schema || 'minItems' in schema) return 'array';
  if ('minimum' in schema || 'maximum' in schema || 'multipleOf' in schema) return 'number';
  return undefined;
}

/** Two schemas as one: properties merged, required lists joined, the later schema's other keywords winning. */
function merge(a: Schema, b: Schema): Schema {
  const merged: Schema = { ...a, ...b };
  if (isSchema(a.properties) || isSchema(b.properties)) merged.properties = { ...(a.properties as Schema), ...(b.properties as Schema) };
  if (Array.isArray(a.required) || Array.isArray(b.required)) merged.required = [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])];
  return merged;
}

const capitalise = (word: string) => (word ? word[0]!.toUpperCase() + word.slice(1) : word);

function safeRegExp(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
}

/** minLength/maxLength count code points, as JSON Schema does: the value repeated up to minLength, cut at maxLength. */
function fitLength(value: string, schema: Schema): string {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  const unit = value ? [...value] : ['x'];
  let chars = [...value];
  while (chars.length < min) chars = chars.length > 0 ? [...chars, ' ', ...unit] : [...unit];
  chars = chars.slice(0, max);
  while (chars.length > min && chars.at(-1) === ' ') chars.pop();
  return chars.join('');
}
