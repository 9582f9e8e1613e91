import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { applyDocumentConventions, transformRoute } from './openapi-conventions.js';
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
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        description: QUICK_START,
      },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from sign-up, sign-in or refresh (15 minutes)' },
          apiKeyAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'sk_sf_…',
            description: 'An API key, sent as a Bearer token; accepted on the routes that name it, within its scopes',
          },
          apiKeyHeaderAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'x-api-key',
            description: "An API key in x-api-key, as Anthropic's clients send it (on /anthropic/v1 routes)",
          },
          googApiKeyHeaderAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'x-goog-api-key',
            description: "An API key in x-goog-api-key, as Google's clients send it (on /gemini/v1beta routes)",
          },
          apiKeyQueryAuth: {
            type: 'apiKey',
            in: 'query',
            name: 'key',
            description: "An API key in the key query parameter, as Google's API also takes it (on /gemini/v1beta routes)",
          },
        },
      },
    },
    transform: transformRoute,
    transformObject: (documentObject) =>
      applyDocumentConventions('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject, [
        { url: '/', description: 'The server that serves this document' },
      ]),
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

const QUICK_START = `Accounts, model catalog, an AI gateway metered in tokens against a wallet, a library, billing and admin.
Every error has the shape \`{ "error": { "code", "message", "details" } }\`.

## Quick start

1. **Sign up** (answers 201 with an access token valid 15 minutes, and a refresh token):

   \`\`\`sh
   curl -s http://localhost:3000/v1/auth/signup -H 'content-type: application/json' \\
     -d '{"email":"ada@example.com","password":"correct horse battery staple","name":"Ada"}'
   \`\`\`

2. **Call the gateway** with the access token (\`POST /v1/auth/login\` gives a new one; \`POST /v1/auth/refresh\` renews it).
   The free plan comes with tokens in the wallet and the built-in offline \`local/*\` models:

   \`\`\`sh
   curl -s http://localhost:3000/v1/ai/text -H "authorization: Bearer $ACCESS_TOKEN" -H 'content-type: application/json' \\
     -d '{"model":"local/text","messages":[{"role":"user","content":"Write a haiku about the sea."}]}'
   \`\`\`

3. **Get an API key** for scripts (on a plan with API access; the key is shown once):

   \`\`\`sh
   curl -s http://localhost:3000/v1/account/api-keys -H "authorization: Bearer $ACCESS_TOKEN" -H 'content-type: application/json' \\
     -d '{"label":"my script","scopes":["ai:text"]}'
   \`\`\`

   Send it as \`authorization: Bearer sk_sf_…\` to the routes whose security lists \`apiKeyAuth\`.

Models and prices: \`GET /v1/models\`; the wallet: \`GET /v1/credits/balance\`; what a call costs: \`POST /v1/credits/estimate\`.`;
