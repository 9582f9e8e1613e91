import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { MODEL_AVAILABILITIES, MODEL_STATUSES } from '../../db/schema/catalog.js';
import { ADMIN_ROUTE } from '../../platform/auth/roles.js';
import type { Clock } from '../../platform/clock/clock.js';
import { DateTime, Nullable, errorResponses } from '../../platform/http/schemas.js';
import { createProviderCheck, type ProviderLister } from './provider-check.js';
import type { CatalogService } from './service.js';

const Count = Type.Integer({ minimum: 0 });

const ProviderCheckResult = Type.Object({
  provider: Type.String(),
  status: Type.Enum(['CHECKED', 'NOT_CHECKABLE', 'NOT_CONFIGURED', 'ERROR'], {
    description:
      'CHECKED: the provider listed its models; NOT_CHECKABLE: it has no list endpoint; NOT_CONFIGURED: no enabled account; ERROR: no account got an answer',
  }),
  reason: Nullable(Type.String({ description: 'Why the provider was not checked, or how it failed' })),
  error: Nullable(
    Type.Object(
      { code: Type.String(), status: Nullable(Type.Integer()), message: Type.String() },
      { description: "The provider's own error, from the last account tried" },
    ),
  ),
  catalogModels: Type.Integer({ minimum: 0, description: 'Catalog models of the provider compared (RETIRED ones are not)' }),
  upstreamModels: Nullable(Type.Integer({ minimum: 0, description: 'Models the provider listed' })),
  notServed: Type.Array(
    Type.Object({
      slug: Type.String(),
      upstreamModel: Type.String(),
      status: Type.Enum([...MODEL_STATUSES]),
      availability: Type.Enum([...MODEL_AVAILABILITIES]),
    }),
    {
      description:
        'Catalog models whose upstream name the provider no longer lists: retire them naming a replacement (flags.replacedBy), or correct the upstream name',
    },
  ),
  notInCatalog: Type.Array(Type.String(), {
    description: 'Upstream names the provider serves that no catalog model names: add the ones worth selling, with their price',
  }),
});

const ProviderCheckReport = Type.Object({
  checkedAt: DateTime,
  summary: Type.Object({ providers: Count, checked: Count, notCheckable: Count, notConfigured: Count, errors: Count, notServed: Count, notInCatalog: Count }),
  providers: Type.Array(ProviderCheckResult),
});

/**
 * The catalog check for operators (ADMIN and SUPER_ADMIN): asks every configured provider what it serves and reports
 * the differences with the catalog. Read-only, like `npm run catalog:check`; it calls each provider's list endpoint
 * once per account until one answers, so it is not for polling.
 */
export const catalogProviderCheckRoutes: FastifyPluginAsyncTypebox<{
  catalog: Pick<CatalogService, 'snapshot'>;
  upstream: ProviderLister;
  clock: Clock;
}> = async (app, { catalog, upstream, clock }) => {
  const check = createProviderCheck({ snapshot: () => catalog.snapshot(), upstream, clock });

  app.get(
    '/v1/admin/catalog/provider-check',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags: ['admin'],
        summary:
          'Compare the catalog with what each configured provider lists: catalog models no longer served, served models the catalog lacks, providers that did not answer (read-only)',
        response: { 200: ProviderCheckReport, ...errorResponses(401, 403) },
      },
    },
    async () => check.run(),
  );
};
