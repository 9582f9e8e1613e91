import { Type, type TProperties, type TSchema } from 'typebox';

/** An object that rejects keys it does not declare (used for every query string and request body). */
export const StrictObject = <T extends TProperties>(properties: T, options: Record<string, unknown> = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });

export const ErrorResponse = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Unknown(),
    }),
  },
  { $id: 'ErrorResponse', description: 'The error envelope returned by every error.' },
);

export const Ok = Type.Object({ ok: Type.Literal(true) });

export const IdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const DateTime = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Query properties for a cursor-paged list; add the route's own filters beside them. */
export const pageQuery = (defaultLimit: number, maxLimit: number) => ({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

export const Page = <T extends TSchema>(item: T) => Type.Object({ items: Type.Array(item), nextCursor: Nullable(Type.String()) });

/** The error responses every route may give, for the OpenAPI document. */
export const errorResponses = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, Type.Ref('ErrorResponse')]));
