import { createHash } from 'node:crypto';
import type { PromptFacts } from './prompt-facts.js';

/** The small pieces of schema.ts: reading a schema's keywords, and the value for a number, a format, a length. */

export type Schema = Record<string, unknown>;
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

export function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  if (Array.isArray(type)) return (type.find((t) => t !== 'null') ?? type[0]) as string | undefined;
  if (typeof type === 'string') return type;
  if ('properties' in schema || 'required' in schema || 'additionalProperties' in schema) return 'object';
  if ('items' in schema || 'prefixItems' in schema || 'minItems' in schema) return 'array';
  if ('minimum' in schema || 'maximum' in schema || 'multipleOf' in schema) return 'number';
  return undefined;
}

/** Two schemas as one: properties merged, required lists joined, the later schema's other keywords winning. */
export function merge(a: Schema, b: Schema): Schema {
  const merged: Schema = { ...a, ...b };
  if (isSchema(a.properties) || isSchema(b.properties)) merged.properties = { ...(a.properties as Schema), ...(b.properties as Schema) };
  if (Array.isArray(a.required) || Array.isArray(b.required))
    merged.required = [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])];
  return merged;
}

/**
 * minLength/maxLength count code points, as JSON Schema does: the value repeated up to minLength, cut at maxLength.
 * The repetitions are appended in place, so padding is linear in the result.
 */
export function fitLength(value: string, schema: Schema): string {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  const chars = [...value];
  const unit = chars.length > 0 ? [...chars] : ['x'];
  while (chars.length < min) {
    if (chars.length > 0) chars.push(' ');
    for (const char of unit) chars.push(char);
  }
  const fitted = chars.length > max ? chars.slice(0, max) : chars;
  while (fitted.length > min && fitted.at(-1) === ' ') fitted.pop();
  return fitted.join('');
}

/** A number the schema's bounds and multipleOf allow: the prompt's first that fits, else one near a bound. */
export function numberWithin(
  schema: Schema,
  integer: boolean,
  { variant, unique }: { variant: number; unique?: boolean },
  promptNumbers: readonly number[],
): number {
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
    : [...promptNumbers, 1, 0, ...fromLow, ...fromHigh, ...middle];
  return candidates.find(fits) ?? (Number.isFinite(low) ? low : Number.isFinite(high) ? high : 0);
}

/** The value for a string `format`, from the prompt when it has one (its date, address, link); undefined for others. */
export function formattedValue(format: string, variant: number, facts: PromptFacts): string | undefined {
  const n = variant > 0 ? String(variant + 1) : '';
  const date = facts.date ?? '2025-01-01';
  switch (format) {
    case 'date':
      return date;
    case 'date-time':
      return `${date}T12:00:00Z`;
    case 'time':
      return '12:00:00Z';
    case 'email':
      return variant === 0 && facts.email ? facts.email : `user${n}@example.com`;
    case 'uri':
    case 'url':
    case 'iri':
    case 'uri-reference':
    case 'iri-reference':
      return variant === 0 && facts.url ? facts.url : `https://example.com/${n}`;
    case 'hostname':
      return `host${n}.example.com`;
    case 'ipv4':
      return `192.0.2.${1 + (variant % 254)}`;
    case 'ipv6':
      return `2001:db8::${(1 + variant).toString(16)}`;
    case 'uuid': {
      const hex = createHash('sha256').update(`${facts.phrase}\u0000${variant}`).digest('hex');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    }
    default:
      return undefined;
  }
}
