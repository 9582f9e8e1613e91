import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { localSchemaRefusal } from './text.js';
import { promptFacts } from './prompt-facts.js';
import { checkLocalSchema, schemaInstance } from './schema.js';
import { LOCAL_SCHEMA_LIMITS, LocalSchemaLimitError } from './schema-limits.js';

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
      people: {
        type: 'array',
        items: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name'] },
        minItems: 2,
        uniqueItems: true,
      },
      tagged: { type: 'array', contains: { const: 'vip' }, items: { type: 'string' } },
    },
    required: ['cities', 'flags', 'scores', 'none', 'pair', 'people', 'tagged'],
  },
  'nested objects, const and enums': {
    type: 'object',
    properties: {
      booking: {
        type: 'object',
        properties: {
          guest: { type: 'object', properties: { email: { type: 'string', format: 'email' }, vip: { type: 'boolean' } }, required: ['email', 'vip'] },
          kind: { const: 'hotel' },
        },
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
      choice: {
        oneOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] },
        ],
      },
      exclusive: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, oneOf: [{ required: ['a'] }, { required: ['b'] }] },
      both: {
        allOf: [
          { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] },
          { properties: { y: { type: 'string' } }, required: ['y'] },
        ],
      },
    },
    required: ['target', 'choice', 'exclusive', 'both'],
  },
  '$ref to $defs and definitions, recursive': {
    type: 'object',
    $defs: { place: { type: 'object', properties: { city: { type: 'string' }, country: { type: 'string' } }, required: ['city', 'country'] } },
    definitions: {
      node: {
        type: 'object',
        properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#/definitions/node' } } },
        required: ['label'],
      },
    },
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
      {
        type: 'object',
        properties: { destination: { type: 'string' }, rooms: { type: 'integer' }, note: { type: 'string' } },
        required: ['destination', 'rooms', 'note'],
      },
      prompt,
    );
    expect(trip).toEqual({ destination: 'Lisbon', rooms: 2, note: expect.stringContaining('rooms lisbon') });
  });

  it('gives each place property its own capitalised word, and falls back when there is none', () => {
    const route = { type: 'object', properties: { origin: { type: 'string' }, destinationCity: { type: 'string' } }, required: ['origin', 'destinationCity'] };
    expect(validInstance(route, 'Trains from Porto to Madrid tomorrow')).toEqual({ origin: 'Porto', destinationCity: 'Madrid' });
    expect(validInstance({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }, 'weather in oslo please')).toEqual({
      location: 'Oslo',
    });
    expect(
      validInstance({ type: 'object', properties: { q: { type: 'string', description: 'The town to look up' } }, required: ['q'] }, 'is it raining in Bergen'),
    ).toEqual({ q: 'Bergen' });
  });

  it('is deterministic', () => {
    for (const schema of Object.values(SCHEMAS)) expect(schemaInstance(schema, promptFacts(prompt))).toEqual(schemaInstance(schema, promptFacts(prompt)));
  });
});

/** The error checking the schema throws (the one generating it throws too), or a failure if it passes. */
function refusal(schema: Record<string, unknown>): LocalSchemaLimitError {
  expect(() => schemaInstance(schema, promptFacts(prompt))).toThrow(LocalSchemaLimitError);
  try {
    checkLocalSchema(schema);
  } catch (err) {
    if (err instanceof LocalSchemaLimitError) return err;
    throw err;
  }
  throw new Error('the schema was not refused');
}

const { minLength, totalMinLength, minItems, values, depth, refChain, schemaNodes, schemaDepth, schemaBytes, patternLength, requestValues } =
  LOCAL_SCHEMA_LIMITS;
const text = (length: number) => ({ type: 'string', minLength: length });
const strings = (count: number, length: number) => ({
  type: 'object',
  properties: Object.fromEntries(Array.from({ length: count }, (_, i) => [`s${i}`, text(length)])),
  required: Array.from({ length: count }, (_, i) => `s${i}`),
});
/** 1 + outer + outer × inner values. */
const grid = (outer: number, inner: number) => ({ type: 'array', minItems: outer, items: { type: 'array', minItems: inner, items: { type: 'integer' } } });
/** `levels` objects inside each other, each requiring the next; the innermost requires a string. */
function nestedObjects(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'object', properties: { leaf: { type: 'string' } }, required: ['leaf'] };
  for (let i = 1; i < levels; i++) schema = { type: 'object', properties: { next: schema }, required: ['next'] };
  return schema;
}
/** A $ref that leads through `hops` - 1 more $refs to a string. */
function refChainOf(hops: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = { d0: { type: 'string', minLength: 2 } };
  for (let i = 1; i < hops; i++) $defs[`d${i}`] = { $ref: `#/$defs/d${i - 1}` };
  return { type: 'object', $defs, properties: { value: { $ref: `#/$defs/d${hops - 1}` } }, required: ['value'] };
}
function nestedJson(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 1; i < levels; i++) schema = { type: 'string', x: schema };
  return schema;
}

describe('the built-in model’s limits (LOCAL_SCHEMA_LIMITS)', () => {
  it('refuses a string longer than minLength allows, and pads one at the limit (linearly) to a valid value', () => {
    expect(refusal({ type: 'object', properties: { essay: text(minLength + 1) }, required: ['essay'] })).toMatchObject({
      limit: 'minLength',
      message: `asks for a string of at least ${minLength + 1} characters at /essay; the built-in model writes at most ${minLength} per string: lower minLength`,
    });
    const { essay } = validInstance({ type: 'object', properties: { essay: text(minLength) }, required: ['essay'] }, prompt) as { essay: string };
    expect([...essay].length).toBeGreaterThanOrEqual(minLength);
    const { phrase } = promptFacts(prompt);
    expect(essay.startsWith(`${phrase} ${phrase} `)).toBe(true);
  });

  it('refuses strings whose minLengths add up past the total', () => {
    const perString = totalMinLength / 4;
    expect(refusal(strings(5, perString))).toMatchObject({
      limit: 'totalMinLength',
      message: expect.stringContaining(`more than ${totalMinLength} characters of strings in all`),
    });
    validInstance(strings(4, perString), prompt);
  });

  it('refuses an array of more minItems than allowed', () => {
    expect(
      refusal({ type: 'object', properties: { ids: { type: 'array', items: { type: 'integer' }, minItems: minItems + 1 } }, required: ['ids'] }),
    ).toMatchObject({
      limit: 'minItems',
      message: `asks for an array of at least ${minItems + 1} items at /ids; the built-in model writes at most ${minItems} items per array: lower minItems`,
    });
    expect(validInstance({ type: 'array', items: { type: 'integer' }, minItems }, prompt)).toHaveLength(minItems);
  });

  it('refuses an answer of more values than allowed', () => {
    expect(refusal(grid(100, 9))).toMatchObject({ limit: 'values', message: expect.stringContaining(`needs more than ${values} values`) });
    expect(validInstance(grid(90, 10), prompt)).toHaveLength(90);
  });

  it('refuses required properties that refer back to their own schema, and nesting past the depth', () => {
    const tree = { type: 'object', properties: { left: { $ref: '#' }, right: { $ref: '#' }, label: { type: 'string' } }, required: ['left', 'right'] };
    expect(refusal(tree)).toMatchObject({ limit: 'depth', message: expect.stringContaining(`nests deeper than ${depth} levels at /left/left/`) });
    expect(refusal(nestedObjects(depth + 2)).limit).toBe('depth');
    validInstance(nestedObjects(depth + 1), prompt);
  });

  it('ends a recursion that may end: an empty array, an object without required properties, or null', () => {
    const children = {
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } },
      required: ['name', 'children'],
    };
    const optional = {
      type: 'object',
      properties: { child: { $ref: '#/$defs/node' } },
      required: ['child'],
      $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } },
    };
    const nullable = { type: ['object', 'null'], properties: { next: { $ref: '#' } }, required: ['next'] };
    for (const schema of [children, optional, nullable]) validInstance(schema, prompt);
    let node = validInstance(nullable, prompt) as { next: unknown } | null;
    let levels = 0;
    for (; node !== null; levels++) node = node.next as typeof node;
    expect(levels).toBe(depth + 1);
  });

  it('refuses a chain of more $refs than allowed, a $ref cycle and a cycle through allOf', () => {
    expect(refusal(refChainOf(refChain + 1))).toMatchObject({
      limit: 'refChain',
      message: expect.stringContaining(`follows more than ${refChain} $refs in a row at /value`),
    });
    expect(validInstance(refChainOf(refChain), prompt)).toEqual({ value: promptFacts(prompt).phrase });
    expect(refusal({ $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }).limit).toBe('refChain');
    expect(refusal({ type: 'object', allOf: [{ $ref: '#' }] }).limit).toBe('refChain');
  });

  it('refuses a schema of too many nodes, too deep or too long, before reading it', () => {
    expect(refusal({ enum: Array.from({ length: schemaNodes - 1 }, (_, i) => i) })).toMatchObject({
      limit: 'schemaNodes',
      message: expect.stringContaining(`more than ${schemaNodes} nodes`),
    });
    validInstance({ enum: Array.from({ length: schemaNodes - 2 }, (_, i) => i) }, prompt);
    expect(refusal(nestedJson(schemaDepth + 1))).toMatchObject({
      limit: 'schemaDepth',
      message: expect.stringContaining(`nests more than ${schemaDepth} levels deep`),
    });
    validInstance(nestedJson(schemaDepth), prompt);
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(refusal({ type: 'string', x: deep }).limit).toBe('schemaDepth');
    const described = (length: number) => ({ type: 'string', description: 'é'.repeat(length) });
    const overhead = JSON.stringify(described(0)).length;
    expect(refusal(described((schemaBytes - overhead) / 2 + 1))).toMatchObject({
      limit: 'schemaBytes',
      message: expect.stringContaining(`is ${schemaBytes + 2} bytes of JSON`),
    });
    validInstance(described((schemaBytes - overhead) / 2), prompt);
  });

  it('refuses a pattern longer than allowed', () => {
    const pattern = (length: number) => ({
      type: 'object',
      properties: { code: { type: 'string', pattern: `^${'a?'.repeat((length - 2) / 2)}$` } },
      required: ['code'],
    });
    expect(pattern(patternLength).properties.code.pattern).toHaveLength(patternLength);
    expect(refusal(pattern(patternLength + 2))).toMatchObject({
      limit: 'patternLength',
      message: expect.stringContaining(`has a pattern of ${patternLength + 2} characters at /code`),
    });
    validInstance(pattern(patternLength), prompt);
  });

  it('checks all the schemas of a request, together within requestValues, naming the field', () => {
    const tools = (count: number) =>
      Array.from({ length: count }, (_, i) => ({ name: `tool_${i}`, parameters: { type: 'object', properties: { rows: grid(90, 10) }, required: ['rows'] } }));
    const perTool = 1 + 1 + 90 + 900;
    const fitting = Math.floor(requestValues / perTool);
    expect(localSchemaRefusal({ tools: tools(fitting) })).toBeUndefined();
    expect(localSchemaRefusal({ tools: tools(fitting + 1) })).toEqual({
      field: 'tools',
      limit: 'requestValues',
      message: `The schemas of the request (tools and response_format) need more than ${requestValues} values together; the built-in model checks at most that many per request: send fewer or smaller tools, or choose another model.`,
    });
    expect(localSchemaRefusal({ tools: tools(1), responseFormat: { type: 'json_schema', name: 'x', schema: strings(1, minLength + 1) } })).toMatchObject({
      field: 'responseFormat',
      message: expect.stringMatching(/^The response_format schema asks for a string of at least \d+ characters at \/s0; .*, or choose another model\.$/),
    });
  });
});

describe('the built-in model’s patterns and prompts', () => {
  it('meets a backtracking pattern against a long run of one letter, with the prompt’s word or a made-up one', () => {
    const word = (pattern: string) => ({ type: 'object', properties: { word: { type: 'string', pattern } }, required: ['word'] });
    const many = `${'a'.repeat(60)}!`;
    expect(validInstance(word('^(a+)+$'), many)).toEqual({ word: 'a'.repeat(60) });
    expect(validInstance(word('^(a+)+!$'), many)).toEqual({ word: 'a!' });
    expect(validInstance(word('^(a|aa)+b$'), many)).toEqual({ word: 'ab' });
  });

  it('reads a long prompt in linear time', () => {
    const letter = (n: number) => String.fromCharCode(97 + (n % 26));
    const names = Array.from({ length: 10_000 }, (_, i) => `Name${letter(i)}${letter(Math.floor(i / 26))}${letter(Math.floor(i / 676))}`);
    const facts = promptFacts(`${'a'.repeat(100_000)}! ${names.join(' ')} ${'1'.repeat(50_000)}x ${'x.'.repeat(50_000)}`);
    expect(facts.email).toBeUndefined();
    expect(facts.capitalised).toHaveLength(64);
    expect(promptFacts('write to ana@example.org').email).toBe('ana@example.org');
  });
});
