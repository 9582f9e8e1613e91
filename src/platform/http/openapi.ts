import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { ErrorResponse } from './schemas.js';

/** OpenAPI 3.1 generated from the route schemas, at /openapi.json, with a browsable page at /docs. */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  app.addSchema(ErrorResponse);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Storefront API',
        version,
        description: 'Accounts, model catalog, AI gateway with a token wallet, community, billing and admin. Errors use `{ error: { code, message, details } }`.',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An access token, or an API key on /v1/ai/* routes' } } },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
