import { Type } from 'typebox';
import { MODEL_FEATURES, MODEL_TYPES, PRICE_UNITS } from '../../db/schema/catalog.js';
import { Nullable, StrictObject } from '../../platform/http/schemas.js';

const literals = <const T extends readonly string[]>(values: T) => Type.Enum([...values] as [...T]);

export const ModelTypeSchema = Type.Enum([...MODEL_TYPES]);
export const FeatureSchema = Type.Enum([...MODEL_FEATURES]);

/** Token (or credit) amounts per price unit: `1m_input_tokens`, `1m_output_tokens`, `image`, `second`, `minute`, `1k_chars`, `generation`. */
export const PerUnit = Type.Object(Object.fromEntries(PRICE_UNITS.map((u) => [u, Type.Optional(Type.Number())])));

export const Capabilities = Type.Object({
  flags: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  controls: Type.Record(Type.String(), Type.Unknown()),
  extra: Type.Record(Type.String(), Type.Unknown()),
  maxBatch: Type.Optional(Type.Integer()),
});

const ModelFields = {
  id: Type.String(),
  slug: Type.String({ description: '<provider_slug>/<model_name>; the value sent as `model` to the gateway' }),
  displayName: Type.String(),
  type: literals(MODEL_TYPES),
  status: literals(['ACTIVE', 'BETA']),
  capabilities: Capabilities,
  pricing: Type.Object(
    { currency: Type.String(), unit: Type.Literal('PROVIDER_COST_MINOR'), note: Type.String(), ...PerUnit.properties },
    { description: 'Provider cost per unit for reference only; clients render `cost`' },
  ),
  cost: Type.Object({
    unit: Type.Literal('credits'),
    tokensPerCredit: Type.Integer(),
    tokensPerUnit: PerUnit,
    creditsPerUnit: PerUnit,
  }),
  maxContextTokens: Nullable(Type.Integer()),
  maxOutputTokens: Nullable(Type.Integer()),
  description: Nullable(Type.String()),
  inputModalities: Type.Array(Type.String()),
  outputModalities: Type.Array(Type.String()),
  features: Type.Array(Type.String()),
  availability: literals(['AVAILABLE', 'RETIRING']),
};

export const PlanRefSchema = Type.Object({ slug: Type.String(), name: Type.String(), priceCents: Type.Integer() });

export const Model = Type.Object({
  ...ModelFields,
  provider: Type.Object({ slug: Type.String(), name: Type.String(), status: literals(['ACTIVE', 'DEGRADED']) }),
  allowed: Nullable(Type.Boolean({ description: "Whether the caller's plan grants the model; null when anonymous" })),
  availableOn: Type.Array(PlanRefSchema, { description: "Plans granting the model, cheapest first, without the caller's; empty when every plan does" }),
});

export const MyModel = Type.Object({
  ...ModelFields,
  provider: Type.Object({ slug: Type.String(), name: Type.String() }),
  availableOn: Type.Array(PlanRefSchema),
});

export const ModelsQuery = StrictObject({
  type: Type.Optional(ModelTypeSchema),
  provider: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  capability: Type.Optional(FeatureSchema),
});

export const MyModelsQuery = StrictObject({ type: Type.Optional(Type.Enum(['TEXT', 'IMAGE', 'VIDEO', 'AUDIO', 'MULTIMODAL'])) });

export const RatesResponse = Type.Object({
  currency: Type.Literal('BDT'),
  tokensPerCredit: Type.Integer(),
  tokenValue: Type.Object({ priceCents: Type.Integer(), tokens: Type.Integer() }, { description: 'Provider cost (in poisha) that this many tokens stand for' }),
  items: Type.Array(
    Type.Object({
      modelId: Type.String(),
      slug: Type.String(),
      displayName: Type.String(),
      type: literals(MODEL_TYPES),
      provider: Type.Object({ slug: Type.String(), name: Type.String() }),
      rates: PerUnit,
    }),
  ),
});

const Message = StrictObject({ role: Type.String({ minLength: 1, maxLength: 32 }), content: Type.String({ maxLength: 200_000 }) });

export const EstimateBody = StrictObject({
  model: Type.String({ minLength: 1, maxLength: 200 }),
  inputTokens: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, description: 'Text: prompt tokens (or send `prompt`/`messages`)' })),
  prompt: Type.Optional(Type.String({ maxLength: 200_000 })),
  messages: Type.Optional(Type.Array(Message, { maxItems: 500 })),
  maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Text: output budget (default 2048)' })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 8, description: 'Image: number of images (default 1)' })),
  durationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 600, description: "Video: length (default the model's default)" })),
  text: Type.Optional(Type.String({ maxLength: 100_000, description: 'Speech: the words to say' })),
  characters: Type.Optional(Type.Integer({ minimum: 1, maximum: 5_000_000, description: 'Speech: characters to say (instead of `text`)' })),
});

export const EstimateResponse = Type.Object({
  model: Type.String(),
  tokens: Type.Integer({ description: 'Tokens the generation will reserve' }),
  credits: Type.Number({ description: 'tokens / tokensPerCredit, rounded up to 2 decimals' }),
  tokensPerCredit: Type.Integer(),
  basis: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]), { description: 'The quantities the estimate assumed' }),
});
