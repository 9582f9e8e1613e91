/**
 * Gemini's schema subset (https://ai.google.dev/api/caching#Schema: OpenAPI 3.0 with types such as `OBJECT` in upper
 * case, `nullable`, `propertyOrdering`) as the JSON schema the gateway's providers take.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (key === 'propertyOrdering' || key === 'nullable') continue;
    if (key === 'type' && typeof value === 'string') out.type = value === 'TYPE_UNSPECIFIED' ? undefined : value.toLowerCase();
    else if (key === 'properties' && typeof value === 'object' && value !== null) {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([name, property]) => [name, jsonSchemaOf(property)]));
    } else if (key === 'items' || key === 'anyOf' || key === 'additionalProperties') out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (out.type === undefined) delete out.type;
  const nullable = (schema as { nullable?: unknown }).nullable === true;
  if (nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}
