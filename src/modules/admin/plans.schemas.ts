import { Type } from 'typebox';
import { PLAN_INTERVALS } from '../plans/service.js';
import { DateTime, StrictObject } from '../../platform/http/schemas.js';

const Json = Type.Object({}, { additionalProperties: true });
const Money = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Minor units' });
const ModelIds = Type.Array(Type.String({ format: 'uuid' }), {
  maxItems: 2000,
  uniqueItems: true,
  description: 'The allow-list (model ids) of a plan with allModels false; replaces the current one',
});
const Channels = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: 50,
  uniqueItems: true,
  description: 'Payment channel slugs the plan may be bought with (empty: every live channel); checkout refuses others with 400',
});

export const PlanIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

export const AdminPlan = Type.Object({
  id: Type.String(),
  slug: Type.String(),
  name: Type.String(),
  description: Type.String(),
  interval: Type.Enum([...PLAN_INTERVALS]),
  priceCents: Type.Integer(),
  currency: Type.String(),
  trialDays: Type.Integer(),
  tokenAllowance: Type.Integer(),
  limits: Json,
  features: Json,
  allModels: Type.Boolean({ description: 'true: the plan grants every model; false: only modelIds' }),
  modelIds: Type.Array(Type.String()),
  allowedChannels: Type.Array(Type.String()),
  status: Type.Enum(['ACTIVE', 'ARCHIVED'], { description: 'ARCHIVED: off the public list, 404 by slug and at checkout; subscribers keep it' }),
  internal: Type.Boolean({ description: 'Never listed nor sold (the playground plan)' }),
  sortOrder: Type.Integer(),
  seedManaged: Type.Boolean(),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const AdminPlanList = Type.Object({ items: Type.Array(AdminPlan) });

const Fields = {
  name: Type.String({ minLength: 1, maxLength: 100 }),
  description: Type.String({ maxLength: 2000 }),
  interval: Type.Enum([...PLAN_INTERVALS]),
  priceCents: Money,
  currency: Type.String({ pattern: '^[A-Za-z]{3}$', description: 'ISO 4217, e.g. BDT' }),
  trialDays: Type.Integer({ minimum: 0, maximum: 365 }),
  tokenAllowance: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Tokens granted each cycle' }),
  limits: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 50 }),
  features: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 50 }),
  allModels: Type.Boolean(),
  modelIds: ModelIds,
  allowedChannels: Channels,
  sortOrder: Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 }),
};

export const CreatePlanBody = StrictObject({
  slug: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$', description: 'Lower-case letters, digits and "-"; 2-63 characters; cannot change later' }),
  name: Fields.name,
  description: Type.Optional(Fields.description),
  interval: Fields.interval,
  priceCents: Fields.priceCents,
  currency: Fields.currency,
  trialDays: Type.Optional(Fields.trialDays),
  tokenAllowance: Type.Optional(Fields.tokenAllowance),
  limits: Type.Optional(Fields.limits),
  features: Type.Optional(Fields.features),
  allModels: Type.Optional({ ...Fields.allModels, default: true }),
  modelIds: Type.Optional(Fields.modelIds),
  allowedChannels: Type.Optional(Fields.allowedChannels),
  sortOrder: Type.Optional(Fields.sortOrder),
});

export const UpdatePlanBody = StrictObject(
  {
    name: Type.Optional(Fields.name),
    description: Type.Optional(Fields.description),
    interval: Type.Optional(Fields.interval),
    priceCents: Type.Optional(Fields.priceCents),
    currency: Type.Optional(Fields.currency),
    trialDays: Type.Optional(Fields.trialDays),
    tokenAllowance: Type.Optional(Fields.tokenAllowance),
    limits: Type.Optional(Fields.limits),
    features: Type.Optional(Fields.features),
    allModels: Type.Optional(Fields.allModels),
    modelIds: Type.Optional(Fields.modelIds),
    allowedChannels: Type.Optional(Fields.allowedChannels),
    sortOrder: Type.Optional(Fields.sortOrder),
    status: Type.Optional(Type.Enum(['ACTIVE', 'ARCHIVED'], { description: 'ARCHIVED archives the plan; ACTIVE restores it' })),
  },
  { minProperties: 1 },
);
