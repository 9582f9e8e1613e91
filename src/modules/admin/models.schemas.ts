import { Type } from 'typebox';
import { MODEL_AVAILABILITIES, MODEL_FEATURES, MODEL_STATUSES, MODEL_TYPES, PRICE_UNITS } from '../catalog/service.js';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

const Status = Type.Enum([...MODEL_STATUSES], { description: 'ACTIVE and BETA are listed; DISABLED is neither listed nor served' });
const Availability = Type.Enum([...MODEL_AVAILABILITIES], {
  description: 'RETIRING: still listed and served, shown as retiring; RETIRED: never listed, answers 503 MODEL_UNAVAILABLE',
});

export const ModelIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

export const AdminModelsQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: '1-200, default 50' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'The nextCursor of the previous page' })),
  status: Type.Optional(Status),
  availability: Type.Optional(Availability),
  provider: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Provider slug' })),
  type: Type.Optional(Type.Enum([...MODEL_TYPES])),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Part of the slug or display name' })),
});

const Json = Type.Object({}, { additionalProperties: true });

export const AdminModel = Type.Object({
  id: Type.String(),
  slug: Type.String(),
  displayName: Type.String(),
  description: Nullable(Type.String()),
  type: Type.String(),
  status: Status,
  availability: Availability,
  upstreamModel: Type.String({ description: "The provider's own model name" }),
  features: Type.Array(Type.String()),
  inputModalities: Type.Array(Type.String()),
  outputModalities: Type.Array(Type.String()),
  maxContextTokens: Nullable(Type.Integer()),
  maxOutputTokens: Nullable(Type.Integer()),
  pricing: Nullable({ ...Json, description: 'Provider cost per unit as stored; null: the model cannot be priced and is not served' }),
  cost: Json,
  capabilities: { ...Json, description: 'What clients see: the built-in defaults with the override merged in' },
  capabilityOverride: { ...Json, description: 'The stored per-model override' },
  provider: Type.Object({ slug: Type.String(), name: Type.String(), status: Type.String() }),
  listed: Type.Boolean({ description: 'Listed by GET /v1/models and servable' }),
  unavailableReason: Nullable(Type.String()),
  seedManaged: Type.Boolean({ description: "false once an operator edited it: the built-in catalog's updates leave it alone" }),
  updatedAt: DateTime,
});

export const AdminModelPage = Type.Object({ items: Type.Array(AdminModel), nextCursor: Nullable(Type.String()) });

const Descriptor = StrictObject({
  type: Type.Optional(Type.Enum(['integer', 'enum', 'image', 'string', 'number', 'object', 'boolean'])),
  label: Type.Optional(Type.String({ maxLength: 100 })),
  values: Type.Optional(Type.Array(Type.Union([Type.String({ maxLength: 100 }), Type.Number()]), { maxItems: 100 })),
  default: Type.Optional(Type.Unknown()),
  min: Type.Optional(Type.Number()),
  max: Type.Optional(Type.Number()),
  step: Type.Optional(Type.Number()),
  role: Type.Optional(Type.String({ maxLength: 50 })),
});
const Controls = Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' }), Nullable(Descriptor), {
  maxProperties: 50,
  description: 'Per control: a (partial) descriptor merged over the inherited one, or null to remove an inherited control',
});

export const CapabilityOverride = StrictObject(
  {
    flags: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 50 })),
    controls: Type.Optional(Controls),
    extra: Type.Optional(Controls),
    maxBatch: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  },
  { description: 'Replaces the stored override; it is deep-merged over the built-in defaults (override wins, null removes)' },
);

export const Pricing = StrictObject(
  {
    currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217, e.g. USD' }),
    note: Type.Optional(Type.String({ maxLength: 300 })),
    ...Object.fromEntries(PRICE_UNITS.map((unit) => [unit, Type.Optional(Type.Number({ minimum: 0, maximum: 1e12 }))])),
  },
  { description: 'Provider cost in minor units of currency per unit (fractions allowed)' },
);

export const UpdateModelBody = StrictObject(
  {
    status: Type.Optional(Status),
    availability: Type.Optional(Availability),
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    features: Type.Optional(Type.Array(Type.Enum([...MODEL_FEATURES]), { uniqueItems: true })),
    maxContextTokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
    maxOutputTokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
    pricing: Type.Optional(Nullable(Pricing)),
    capabilityOverride: Type.Optional(CapabilityOverride),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Kept in the audit trail' })),
  },
  { minProperties: 1 },
);
