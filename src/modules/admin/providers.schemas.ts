import { Type } from 'typebox';
import { PROVIDER_STATUSES } from '../catalog/service.js';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

const ProviderStatus = Type.Enum([...PROVIDER_STATUSES], {
  description:
    'ACTIVE and DEGRADED providers are listed; INACTIVE (no working credential) and DISABLED (switched off by an operator) are not. The upstream pool moves ACTIVE/DEGRADED/INACTIVE with call health; it never lifts DISABLED.',
});
const LastError = Nullable(Type.Object({ code: Nullable(Type.String()), message: Nullable(Type.String()), at: DateTime }));
const Money = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

export const ProviderSlugParams = StrictObject({ slug: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9][a-z0-9-]*$' }) });
export const AccountParams = StrictObject({ slug: ProviderSlugParams.properties.slug, id: Type.String({ format: 'uuid' }) });

export const AdminProvider = Type.Object({
  id: Type.String(),
  slug: Type.String(),
  name: Type.String(),
  status: ProviderStatus,
  builtIn: Type.Boolean(),
  website: Nullable(Type.String()),
  models: Type.Integer({ description: 'Models of the provider in the catalog, any status' }),
  listedModels: Type.Integer({ description: 'Of those, the ones listed and servable now' }),
  health: Type.Object({
    accounts: Type.Integer(),
    enabled: Type.Integer(),
    failing: Type.Integer({ description: 'Enabled accounts whose last call failed' }),
    overBudget: Type.Integer({ description: 'Enabled accounts that used their monthly budget' }),
    failures: Type.Integer({ description: 'Consecutive failures summed over the accounts' }),
    spendCents: Type.Integer({ description: "Provider cost spent this calendar month (UTC), minor units of the provider's currency" }),
    budgetCents: Nullable(Type.Integer({ description: 'Monthly budgets of the enabled accounts summed; null when one has no cap' })),
    lastError: LastError,
  }),
  updatedAt: DateTime,
});

export const AdminProviderList = Type.Object({ items: Type.Array(AdminProvider) });

export const ProviderStatusBody = StrictObject({
  status: ProviderStatus,
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Kept in the audit trail' })),
});

export const UpstreamAccount = Type.Object({
  id: Type.String(),
  providerSlug: Type.String(),
  label: Type.String(),
  source: Type.Enum(['ENV', 'OPERATOR'], {
    description: 'ENV: from <PROVIDER>_API_KEY (only enabled can change here); OPERATOR: added through this API, key stored encrypted',
  }),
  enabled: Type.Boolean(),
  status: Type.Enum(['ACTIVE', 'FAILING']),
  keyHint: Nullable(Type.String({ description: 'The last 4 characters of the key; the key itself is never returned' })),
  baseUrl: Nullable(Type.String()),
  monthlyBudgetCents: Nullable(Type.Integer({ description: 'Provider cost the account may spend per calendar month; null = no cap' })),
  spendCents: Type.Integer({ description: 'Spent this month (UTC), rounded up' }),
  overBudget: Type.Boolean(),
  consecutiveFailures: Type.Integer(),
  lastError: LastError,
  lastSuccessAt: Nullable(DateTime),
  usable: Type.Boolean({ description: 'Enabled and its key readable by this instance (false when stored with another SECRETS_ENCRYPTION_KEY)' }),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const UpstreamAccountList = Type.Object({ items: Type.Array(UpstreamAccount) });

const Label = Type.String({ minLength: 1, maxLength: 100 });
const ApiKey = Type.String({ minLength: 8, maxLength: 1000, description: 'Stored encrypted (AES-256-GCM); never returned' });
const BASE_URL_RULES =
  "The provider's API base (null: the provider's default). The account's key is sent there, so it must be https and resolve to public internet addresses only; with ALLOW_PRIVATE_NETWORK=true private and loopback hosts are accepted as well, and only they may use plain http. Cloud metadata addresses are always refused.";
const baseUrlWith = (description: string) => Nullable(Type.String({ minLength: 1, maxLength: 2048, description }));
const Budget = Nullable({ ...Money, description: 'Monthly cap of provider cost in minor units; null = no cap' });

export const CreateAccountBody = StrictObject({
  label: Label,
  apiKey: ApiKey,
  baseUrl: Type.Optional(baseUrlWith(BASE_URL_RULES)),
  monthlyBudgetCents: Type.Optional(Budget),
  enabled: Type.Optional(Type.Boolean({ default: true })),
});

export const UpdateAccountBody = StrictObject(
  {
    label: Type.Optional(Label),
    apiKey: Type.Optional(ApiKey),
    baseUrl: Type.Optional(baseUrlWith(`${BASE_URL_RULES} Changing it requires apiKey in the same request: the stored key never follows a new address.`)),
    monthlyBudgetCents: Type.Optional(Budget),
    enabled: Type.Optional(Type.Boolean()),
  },
  { minProperties: 1 },
);
