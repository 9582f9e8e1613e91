import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

export interface ValidationIssue {
  field: string;
  message: string;
}

const PART_LABEL: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Turns ajv's errors into `{ field, message }` issues and one sentence for the user. */
export function describeValidationErrors(errors: FastifySchemaValidationError[], context: string | undefined): { message: string; details: ValidationIssue[] } {
  const part = PART_LABEL[context ?? 'body'] ?? context ?? 'body';
  const issues: ValidationIssue[] = [];
  for (const err of errors) {
    const issue = describe(err, part);
    if (!issues.some((i) => i.field === issue.field && i.message === issue.message)) issues.push(issue);
  }
  const first = issues[0];
  const message = first
    ? `Invalid request: ${first.field ? `${first.field} ` : ''}${first.message}${issues.length > 1 ? ` (and ${issues.length - 1} more issue${issues.length > 2 ? 's' : ''})` : ''}.`
    : 'Invalid request.';
  return { message, details: issues };
}

function describe(err: FastifySchemaValidationError, part: string): ValidationIssue {
  const params = err.params ?? {};
  const path = (err.instancePath ?? '').split('/').filter(Boolean).join('.');
  const field = path ? (part === 'body' ? path : `${part}.${path}`) : part === 'body' ? '' : part;
  switch (err.keyword) {
    case 'required':
      return { field: join(field, String(params.missingProperty)), message: 'is required' };
    case 'additionalProperties': {
      const extra = String(params.additionalProperty);
      if (part === 'query') return { field: `query.${extra}`, message: `is not a known query parameter` };
      return { field: join(field, extra), message: 'is not an accepted field' };
    }
    case 'type':
      return { field: field || part, message: `must be ${article(String(params.type))}` };
    case 'minLength':
      return { field, message: `must be at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'} long` };
    case 'maxLength':
      return { field, message: `must be at most ${String(params.limit)} characters long` };
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum':
      return { field, message: `must be ${String(params.comparison)} ${String(params.limit)}` };
    case 'minItems':
      return { field, message: `must have at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}` };
    case 'maxItems':
      return { field, message: `must have at most ${String(params.limit)} items` };
    case 'enum':
      return { field, message: `must be one of: ${(params.allowedValues as unknown[]).join(', ')}` };
    case 'const':
      return { field, message: `must be ${JSON.stringify(params.allowedValue)}` };
    case 'format':
      return { field, message: `must be a valid ${FORMAT_NAMES[String(params.format)] ?? String(params.format)}` };
    case 'pattern':
      return { field, message: `has an invalid format` };
    default:
      return { field, message: err.message ?? 'is invalid' };
  }
}

const FORMAT_NAMES: Record<string, string> = {
  email: 'email address',
  'date-time': 'ISO-8601 date-time',
  uri: 'URL',
  uuid: 'id',
};

const join = (a: string, b: string) => (a ? `${a}.${b}` : b);
const article = (type: string) => (type === 'object' || type === 'array' || type === 'integer' ? `an ${type}` : `a ${type}`);
