import cookie from '@fastify/cookie';
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { authPlugin } from './platform/auth/plugin.js';
import { registerErrorHandling } from './platform/http/error-handler.js';
import { registerHealthRoutes } from './platform/http/health.js';
import { registerOpenApi } from './platform/http/openapi.js';
import { registerRateLimit } from './platform/http/rate-limit.js';
import { requestIdFor } from './platform/http/request-id.js';
import { registerValidation } from './platform/http/validation.js';
import { registerHttpMetrics } from './platform/metrics/metrics.js';
import { createPlatform, type Platform, type PlatformOverrides } from './platform/platform.js';
import { createServices, domainJobs, type Services } from './services.js';
import { authRoutes } from './modules/auth/routes.js';
import { meRoutes } from './modules/account/me.routes.js';

export const VERSION = '0.1.0';

export interface BuiltApp {
  app: FastifyInstance;
  platform: Platform;
  services: Services;
}

export interface BuildOptions extends PlatformOverrides {
  /** Start the job workers (default true). */
  startJobs?: boolean;
}

/** Builds the whole service: platform, domain services, HTTP routes. Listening is the caller's business. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<BuiltApp> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
    },
    genReqId: requestIdFor,
    trustProxy: config.trustProxy,
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const platform = await createPlatform(config, app.log, options);
  const services = createServices(platform);
  platform.jobs.register(domainJobs(platform, services));

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onClose', async () => platform.close());

  registerValidation(app);
  registerErrorHandling(app);
  await registerOpenApi(app, VERSION);
  await app.register(cookie);
  await registerRateLimit(app, { perMinute: config.rateLimitPerMinute, redis: platform.redis });
  await app.register(authPlugin, { tokens: platform.tokens });
  registerHttpMetrics(app, platform.metrics);
  registerHealthRoutes(app, platform);

  await app.register(authRoutes, {
    auth: services.auth,
    secureCookies: config.env === 'production',
    idpClientId: config.idp.issuer && config.idp.clientId ? config.idp.clientId : null,
  });
  await app.register(meRoutes, { auth: services.auth, activeSubscription: async () => null });

  if (config.adminEmail && config.adminPassword) {
    const outcome = await services.auth.ensureSuperAdmin(config.adminEmail, config.adminPassword);
    app.log.info({ email: config.adminEmail, outcome }, 'super admin ensured');
  }
  if (options.startJobs !== false) await platform.jobs.start();
  await app.ready();
  return { app, platform, services };
}
