import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { promptFacts, schemaInstance } from './local-schema.js';

// ajv-formats ships CommonJS; its default export arrives wrapped under ESM (as in platform/http/validation.ts).
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));

/** The generated value, after checking it validates (the errors are the failure message). */
function validInstance(schema: Record<string, unknown>, prompt: string): unknown {
  const value = schemaInstance(schema, promptFacts(prompt));
  const validate = ajv.compile(schema);
  expect(validate(value) ? [] : validate.errors, JSON.stringify(value)).toEqual([]);
  return value;
}

const prompt = 'Book 2 rooms in Lisbon from 2025-06-01 for Ana, mail ana@example.org, see https://hotels.example.com/lisbon.';

const SCHEMAS: Record<string, Record<string, unknown>> = {
  'an empty object schema': { type: 'object' },
  'no type at all': {},
  'a strict OpenAI schema': {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: ['string', 'null'], enum: ['celsius', 'fahrenheit', null] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
  'numbers within bounds': {
    type: 'object',
    properties: {
      rooms: { type: 'integer', minimum: 1, maximum: 9 },
      price: { type: 'number', exclusiveMinimum: 100, exclusiveMaximum: 101 },
      stars: { type: 'integer', minimum: 3, maximum: 5 },
      step: { type: 'number', multipleOf: 0.5, minimum: 7.2 },
      negative: { type: 'integer', maximum: -10 },
      tens: { type: 'integer', multipleOf: 10, minimum: 11, maximum: 29 },
    },
    required: ['rooms', 'price', 'stars', 'step', 'negative', 'tens'],
  },
  'strings with lengths, patterns and formats': {
    type: 'object',
    properties: {
      code: { type: 'string', pattern: '^[A-Z]{3}$' },
      digits: { type: 'string', pattern: '^\\d+$' },
      short: { type: 'string', maxLength: 3 },
      long: { type: 'string', minLength: 60 },
      day: { type: 'string', format: 'date' },
      at: { type: 'string', format: 'date-time' },
      time: { type: 'string', format: 'time' },
      email: { type: 'string', format: 'email' },
      link: { type: 'string', format: 'uri' },
      id: { type: 'string', format: 'uuid' },
      host: { type: 'string', format: 'hostname' },
      ip: { type: 'string', format: 'ipv4' },
    },
    required: ['code', 'digits', 'short', 'long', 'day', 'at', 'time', 'email', 'link', 'id', 'host', 'ip'],
  },
  'arrays with minItems, maxItems, uniqueItems and tuples': {
    type: 'object',
    properties: {
      cities: { type: 'array', items: { type: 'string' }, minItems: 3, uniqueItems: true },
      flags: { type: 'array', items: { type: 'boolean' }, minItems: 2, uniqueItems: true },
      scores: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 3 }, minItems: 4, maxItems: 4, uniqueItems: true },
      none: { type: 'array', items: { type: 'string' }, maxItems: 0 },
      pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false, minItems: 2 },
      people: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name'] }, minItems: 2, uniqueItems: true },
      tagged: { type: 'array', contains: { const: 'vip' }, items: { type: 'string' } },
    },
    required: ['cities', 'flags', 'scores', 'none', 'pair', 'people', 'tagged'],
  },
  'nested objects, const and enums': {
    type: 'object',
    properties: {
      booking: {
        type: 'object',
        properties: { guest: { type: 'object', properties: { email: { type: 'string', format: 'email' }, vip: { type: 'boolean' } }, required: ['email', 'vip'] }, kind: { const: 'hotel' } },
        required: ['guest', 'kind'],
        additionalProperties: false,
      },
      level: { enum: ['low', 'high'] },
      version: { const: 2 },
    },
    required: ['booking', 'level', 'version'],
  },
  'anyOf, oneOf and allOf': {
    type: 'object',
    properties: {
      target: { anyOf: [{ type: 'string', format: 'email' }, { type: 'integer' }] },
      choice: { oneOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] }] },
      exclusive: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, oneOf: [{ required: ['a'] }, { required: ['b'] }] },
      both: { allOf: [{ type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] }, { properties: { y: { type: 'string' } }, required: ['y'] }] },
    },
    required: ['target', 'choice', 'exclusive', 'both'],
  },
  '$ref to $defs and definitions, recursive': {
    type: 'object',
    $defs: { place: { type: 'object', properties: { city: { type: 'string' }, country: { type: 'string' } }, required: ['city', 'country'] } },
    definitions: { node: { type: 'object', properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#/definitions/node' } } }, required: ['label'] } },
    properties: { from: { $ref: '#/$defs/place' }, to: { $ref: '#/$defs/place' }, tree: { $ref: '#/definitions/node' } },
    required: ['from', 'to', 'tree'],
  },
  'required names only in additionalProperties': {
    type: 'object',
    additionalProperties: { type: 'integer', minimum: 5 },
    required: ['count'],
  },
  'a dependency left out when optional': {
    type: 'object',
    properties: { card: { type: 'string' }, cvc: { type: 'string' }, name: { type: 'string' } },
    required: ['name'],
    dependentRequired: { card: ['cvc'] },
  },
};

describe('the built-in model’s JSON-schema instances', () => {
  it.each(Object.entries(SCHEMAS))('are valid for %s', (_name, schema) => {
    validInstance(schema, prompt);
  });

  it('take values from the prompt where the property suggests', () => {
    const value = validInstance(SCHEMAS['strings with lengths, patterns and formats']!, prompt) as Record<string, string>;
    expect(value).toMatchObject({ day: '2025-06-01', at: '2025-06-01T12:00:00Z', email: 'ana@example.org', link: 'https://hotels.example.com/lisbon' });
    const trip = validInstance(
      { type: 'object', properties: { destination: { type: 'string' }, rooms: { type: 'integer' }, note: { type: 'string' } }, required: ['destination', 'rooms', 'note'] },
      prompt,
    );
    expect(trip).toEqual({ destination: 'Lisbon', rooms: 2, note: expect.stringContaining('rooms lisbon') });
  });

  it('gives each place property its own capitalised word, and falls back when there is none', () => {
    const route = { type: 'object', properties: { origin: { type: 'string' }, destinationCity: { type: 'string' } }, required: ['origin', 'destinationCity'] };
    expect(validInstance(route, 'Trains from Porto to Madrid tomorrow')).toEqual({ origin: 'Porto', destinationCity: 'Madrid' });
    expect(validInstance({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }, 'weather in oslo please')).toEqual({ location: 'Oslo' });
    expect(validInstance({ type: 'object', properties: { q: { type: 'string', description: 'The town to look up' } }, required: ['q'] }, 'is it raining in Bergen')).toEqual({ q: 'Bergen' });
  });

  it('is deterministic', () => {
    for (const schema of Object.values(SCHEMAS)) expect(schemaInstance(schema, promptFacts(prompt))).toEqual(schemaInstance(schema, promptFacts(prompt)));
  });
});
