/**
 * Structured outputs in the fake Anthropic Messages API (https://platform.claude.com/docs/en/build-with-claude/structured-outputs,
 * `output_config: { format: { type: "json_schema", schema } }`, shapes as `JSONOutputFormat` in `@anthropic-ai/sdk`
 * 1.13.0): the fake answers with JSON that matches the schema, and refuses what the real API refuses. Messages the
 * real API is known to give are used word for word: an object schema without `additionalProperties: false` ("For
 * 'object' type, 'additionalProperties' must be explicitly set to false"), a node without a type ("Invalid schema:
 * Schema type is missing"). Models: the docs list structured outputs for Claude Opus 4.6, Sonnet 4.6, Sonnet 4.5,
 * Opus 4.5 and Haiku 4.5 (and newer); the older ones (Claude 3.x, Sonnet 4, Opus 4 and 4.1) are refused, in the
 * fake's own words since the docs give none. Model names the docs do not know (`claude-fake`) take it.
 */

const isObject = (value: unknown): value is Record<string, any> => typeof value === 'object' && value !== null && !Array.isArray(value);

const WITHOUT_STRUCTURED_OUTPUTS = /^claude-(?:[23]|instant)|^claude-(?:opus|sonnet)-4-(?:0|1|20)/;

/** The schema behind a local `$ref` (`#/$defs/X` or `#/definitions/X`). */
function resolve(root: Record<string, any>, schema: Record<string, any>): Record<string, any> {
  if (typeof schema.$ref !== 'string') return schema;
  const [, where, name] = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref) ?? [];
  const target = where && name ? root[where]?.[name] : undefined;
  return isObject(target) ? target : {};
}

/** What the real API says about one schema node (and those inside it), or null. */
function schemaProblem(root: Record<string, any>, schema: unknown, at: string, depth = 0): string | null {
  if (!isObject(schema)) return `${at}: Input should be a valid dictionary`;
  if (depth > 32) return `${at}: Invalid schema: recursive schemas are not supported`;
  if (typeof schema.$ref === 'string') return null;
  const typed = schema.type !== undefined || ['anyOf', 'oneOf', 'allOf', 'enum', 'const'].some((key) => schema[key] !== undefined);
  if (!typed) return `${at}: Invalid schema: Schema type is missing for schema: ${JSON.stringify(schema)}`;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('object')) {
    if (schema.additionalProperties === true)
      return `${at}: For 'object' type, 'additionalProperties: true' is not supported. Please set 'additionalProperties' to false`;
    if (schema.additionalProperties !== false) return `${at}: For 'object' type, 'additionalProperties' must be explicitly set to false`;
  }
  const inner: [unknown, string][] = [
    ...Object.entries(isObject(schema.properties) ? schema.properties : {}).map(([name, value]): [unknown, string] => [value, `${at}.properties.${name}`]),
    ...(schema.items !== undefined ? [[schema.items, `${at}.items`] as [unknown, string]] : []),
    ...['anyOf', 'oneOf', 'allOf'].flatMap((key) =>
      Array.isArray(schema[key]) ? schema[key].map((value: unknown, i: number): [unknown, string] => [value, `${at}.${key}.${i}`]) : [],
    ),
    ...['$defs', 'definitions'].flatMap((key) =>
      Object.entries(isObject(schema[key]) ? schema[key] : {}).map(([name, value]): [unknown, string] => [value, `${at}.${key}.${name}`]),
    ),
  ];
  for (const [value, path] of inner) {
    const problem = schemaProblem(root, value, path, depth + 1);
    if (problem) return problem;
  }
  return null;
}

/** The real API's message for a wrong `output_config`, or null (also null when there is no format to check). */
export function outputConfigProblem(body: any): string | null {
  if (body.output_config === undefined) return null;
  if (!isObject(body.output_config)) return 'output_config: Input should be a valid dictionary';
  const format = body.output_config.format;
  if (format === undefined || format === null) return null;
  if (!isObject(format)) return 'output_config.format: Input should be a valid dictionary';
  if (format.type !== 'json_schema') return `output_config.format.type: Input should be 'json_schema'`;
  if (format.schema === undefined) return 'output_config.format.schema: Field required';
  if (WITHOUT_STRUCTURED_OUTPUTS.test(String(body.model)))
    return `output_config.format: structured outputs are not supported by the model '${String(body.model)}'.`;
  return schemaProblem(format.schema, format.schema, 'output_config.format.schema');
}

const STRING_FORMATS: Record<string, string> = {
  'date-time': '2025-06-01T12:00:00Z',
  date: '2025-06-01',
  time: '12:00:00',
  email: 'keeper@example.com',
  uri: 'https://example.com/lighthouse',
  uuid: '0196f2a4-5c1e-7000-8000-000000000001',
};

/** A value that matches `schema`: every property filled, the first of each choice, one item per array. */
function valueOf(root: Record<string, any>, node: Record<string, any>, depth = 0): unknown {
  const schema = resolve(root, node);
  if (depth > 16) return null;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const choice = (schema.anyOf ?? schema.oneOf ?? schema.allOf) as unknown[] | undefined;
  if (Array.isArray(choice) && choice.length > 0 && isObject(choice[0])) return valueOf(root, choice[0], depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type.find((t: unknown) => t !== 'null') ?? 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(
        Object.entries(isObject(schema.properties) ? schema.properties : {}).map(([name, value]) => [
          name,
          valueOf(root, value as Record<string, any>, depth + 1),
        ]),
      );
    case 'array':
      return isObject(schema.items) ? [valueOf(root, schema.items, depth + 1)] : [];
    case 'string':
      return STRING_FORMATS[schema.format as string] ?? 'The lamp turns all night.';
    case 'integer':
      return 7;
    case 'number':
      return 7.5;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/** The answer text of a request with an `output_config.format` (JSON matching its schema), or null without one. */
export function structuredText(body: any): string | null {
  const schema = body?.output_config?.format?.schema;
  return isObject(schema) ? JSON.stringify(valueOf(schema, schema)) : null;
}
