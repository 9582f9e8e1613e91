import cookie from '@fastify/cookie';
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { authPlugin } from './platform/auth/plugin.js';
import { frameworkErrors, registerErrorHandling } from './platform/http/error-handler.js';
import { registerHealthRoutes } from './platform/http/health.js';
import { loggerOptions } from './platform/http/logging.js';
import { registerOpenApi } from './platform/http/openapi.js';
import { registerCredentialRateLimit, registerRateLimit } from './platform/http/rate-limit.js';
import { requestIdFor } from './platform/http/request-id.js';
import { registerServerTiming } from './platform/http/server-timing.js';
import { registerValidation } from './platform/http/validation.js';
import { registerHttpSpans } from './platform/telemetry/http-spans.js';
import { startTracing } from './platform/telemetry/tracing.js';
import { registerHttpMetrics } from './platform/metrics/metrics.js';
import { createPlatform, type Platform, type PlatformOverrides } from './platform/platform.js';
import { domainJobs, registerJobs } from './domain-jobs.js';
import { createServices, type Services } from './services.js';
import { authRoutes } from './modules/auth/routes.js';
import { meRoutes } from './modules/account/me.routes.js';
import { catalogRoutes } from './modules/catalog/routes.js';
import { plansRoutes } from './modules/plans/routes.js';
import { walletRoutes } from './modules/wallet/routes.js';
import { idpRoutes } from './modules/auth/idp.routes.js';
import { notificationRoutes } from './modules/notifications/routes.js';
import { accountSecurityRoutes } from './modules/account/security.routes.js';
import { twoFactorRoutes } from './modules/account/two-factor.routes.js';
import { accountSettingsRoutes } from './modules/account/settings.routes.js';
import { accountDataRoutes } from './modules/account/data.routes.js';
import { apiKeyRoutes } from './modules/apikeys/routes.js';
import { gatewayRoutes } from './modules/gateway/surfaces/text.routes.js';
import { filesRoutes } from './modules/files/routes.js';
import { mediaRoutes } from './modules/gateway/surfaces/media.routes.js';
import { embeddingsRoutes } from './modules/gateway/surfaces/embeddings.routes.js';
import { jobsRoutes } from './modules/jobs/routes.js';
import { libraryRoutes } from './modules/library/routes.js';
import { communityPostRoutes } from './modules/community/posts.routes.js';
import { communityFeedRoutes } from './modules/community/feeds.routes.js';
import { communityWorkRoutes } from './modules/community/works.routes.js';
import { communitySocialRoutes } from './modules/community/social.routes.js';
import { subscriptionRoutes } from './modules/subscriptions/routes.js';
import { usageRoutes } from './modules/usage/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { topUpAdminRoutes } from './modules/topup/admin.routes.js';
import { auditRoutes } from './modules/audit/routes.js';
import { adminPaymentRoutes } from './modules/payments/admin.routes.js';
import { playgroundRoutes } from './modules/playground/routes.js';
import { adminUserRoutes } from './modules/admin/users.routes.js';
import { adminModerationRoutes } from './modules/admin/moderation.routes.js';
import { adminAnalyticsRoutes } from './modules/admin/analytics.routes.js';
import { flagRoutes } from './modules/flags/routes.js';
import { flagAdminRoutes } from './modules/flags/admin.routes.js';
import { announcementRoutes } from './modules/announcements/routes.js';
import { announcementAdminRoutes } from './modules/announcements/admin.routes.js';
import { adminProviderRoutes } from './modules/admin/providers.routes.js';
import { adminModelRoutes } from './modules/admin/models.routes.js';
import { catalogProviderCheckRoutes } from './modules/catalog/admin.routes.js';
import { adminPlanRoutes } from './modules/admin/plans.routes.js';
import { adminCouponRoutes } from './modules/admin/coupons.routes.js';
import { currentRoleCheck } from './platform/auth/roles.js';
import { fallbackAdminRoutes } from './modules/gateway/surfaces/fallbacks.routes.js';
import { workspaceRoutes } from './modules/workspaces/routes.js';
import { paymentRoutes } from './modules/payments/routes.js';
import { topUpRoutes } from './modules/topup/routes.js';
import { AnthropicError, GeminiError, OpenAiError } from './modules/compat/index.js';
import { openAiRoutes } from './modules/compat/openai.routes.js';
import { openAiEmbeddingsRoutes } from './modules/compat/openai-embeddings.routes.js';
import { anthropicRoutes } from './modules/compat/anthropic.routes.js';
import { geminiRoutes } from './modules/compat/gemini.routes.js';
import { openAiResponsesRoutes } from './modules/compat/responses.routes.js';

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
    logger: loggerOptions(config.logLevel),
    genReqId: requestIdFor,
    frameworkErrors,
    trustProxy: config.trustProxy,
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Before anything traced runs; off (no OTLP endpoint), nothing is installed.
  const tracing = startTracing(config.tracing);
  if (tracing) registerHttpSpans(app);
  registerServerTiming(app);
  const platform = await createPlatform(config, app.log, options);
  const services = createServices(platform);
  // Reference data (catalog, plans) on first start and after upgrades; one query when unchanged.
  await services.catalog.seed();
  await services.plans.seed();
  await services.library.seed();
  await services.topup.seed();
  await services.playground.seed(app.log);
  await services.payments.start();
  // Upstream accounts from the environment; providers with a working credential become ACTIVE.
  await services.gateway.start();
  registerJobs(platform.jobs, domainJobs(platform, services));

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onClose', async () => {
    await platform.close();
    await tracing?.shutdown();
  });

  registerValidation(app);
  registerErrorHandling(app);
  await registerOpenApi(app, VERSION);
  // The SDK-compatible surfaces answer errors in their vendor's shape; the schemas are shared so the document references
  // them. Shared schemas go in before any route: one added after routes are registered resets the validator compiler.
  app.addSchema(OpenAiError);
  app.addSchema(AnthropicError);
  app.addSchema(GeminiError);
  await app.register(cookie);
  await registerRateLimit(app, { perMinute: config.rateLimitPerMinute, redis: platform.redis, metrics: platform.metrics });
  await app.register(authPlugin, { tokens: platform.tokens, apiKeys: services.apiKeys.verifier, sessionOpen: services.auth.sessionOpen });
  // An API key's own requests-per-minute, in the rate-limit store shared by the instances.
  registerCredentialRateLimit(app, (request) => {
    const perMinute = request.principal?.keyControls?.requestsPerMinute;
    return perMinute && request.principal?.apiKeyId ? { key: `api-key:${request.principal.apiKeyId}`, perMinute } : null;
  });
  registerHttpMetrics(app, platform.metrics, { ...config.metrics, host: config.host });
  registerHealthRoutes(app, platform);

  await app.register(authRoutes, {
    auth: services.auth,
    secureCookies: config.env === 'production',
    idpClientId: config.idp.issuer && config.idp.clientId ? config.idp.clientId : null,
  });
  await app.register(meRoutes, { auth: services.auth, activeSubscription: (userId) => services.subscriptions.activeSubscriptionView(userId) });
  await app.register(catalogRoutes, {
    catalog: services.catalog,
    plans: services.plans,
    activePlanId: (userId) => services.subscriptions.activePlanId(userId),
  });
  await app.register(plansRoutes, { plans: services.plans });
  await app.register(flagRoutes, { flags: services.flags });
  await app.register(announcementRoutes, { announcements: services.announcements });
  await app.register(walletRoutes, { wallet: services.wallet });
  await app.register(subscriptionRoutes, { billing: services.subscriptionBilling });
  await app.register(paymentRoutes, { payments: services.payments });
  await app.register(topUpRoutes, { topup: services.topup });
  await app.register(apiKeyRoutes, { apiKeys: services.apiKeys });
  await app.register(gatewayRoutes, { gateway: services.gateway });
  await app.register(mediaRoutes, { media: services.media, gateway: services.gateway });
  await app.register(embeddingsRoutes, { gateway: services.gateway });
  await app.register(openAiRoutes, { compat: services.compat, prefix: '/openai/v1' });
  await app.register(openAiEmbeddingsRoutes, { gateway: services.gateway, prefix: '/openai/v1' });
  await app.register(openAiResponsesRoutes, { responses: services.responses, prefix: '/openai/v1' });
  await app.register(anthropicRoutes, { compat: services.compat, prefix: '/anthropic/v1' });
  await app.register(geminiRoutes, { compat: services.compat, prefix: '/gemini/v1beta' });
  await app.register(jobsRoutes, { jobs: services.jobs });
  // onClose hooks run last-registered first: buffered gateway spend and key stamps are written before the platform
  // closes the database.
  app.addHook('onClose', async () => {
    services.wallet.stop();
    services.jobs.stop();
    await Promise.all([services.gateway.stop(), services.apiKeys.stop()]);
  });
  await app.register(filesRoutes, { files: services.files });
  await app.register(idpRoutes, {
    auth: services.auth,
    idp: services.idp,
    clock: platform.clock,
    publicBaseUrl: config.publicBaseUrl,
    frontendUrl: config.frontendUrl,
    secureCookies: config.env === 'production',
  });
  const ensureActive = (userId: string) => services.auth.getActiveUser(userId);
  await app.register(notificationRoutes, { notifications: services.notifications, ensureActive });
  await app.register(accountSecurityRoutes, { account: services.account, ensureActive });
  await app.register(twoFactorRoutes, { twoFactor: services.auth.twoFactor, ensureActive });
  await app.register(accountSettingsRoutes, { account: services.account, notifications: services.notifications, ensureActive });
  await app.register(accountDataRoutes, { account: services.account, ensureActive });
  await app.register(libraryRoutes, { library: services.library, ensureActive });
  await app.register(usageRoutes, { usage: services.usage, ensureActive });
  await app.register(webhookRoutes, { webhooks: services.webhooks, ensureActive });
  await app.register(workspaceRoutes, { workspaces: services.workspaces, ensureActive });
  // Admin routes: the account's current role is checked on every call (a demoted operator loses access at once).
  await app.register(async (admin) => {
    admin.addHook(
      'preValidation',
      currentRoleCheck(async (userId) => (await services.auth.getActiveUser(userId)).role),
    );
    await admin.register(auditRoutes, { audit: services.audit });
    await admin.register(adminPaymentRoutes, { payments: services.payments, audit: services.audit });
    await admin.register(playgroundRoutes, { playground: services.playground });
    const { auth, audit, wallet, subscriptions, apiKeys } = services;
    await admin.register(adminUserRoutes, { auth, audit, wallet, subscriptions, apiKeys });
    await admin.register(adminModerationRoutes, { community: services.community, audit });
    await admin.register(adminAnalyticsRoutes, { auth, payments: services.payments, usage: services.usage, clock: platform.clock });
    await admin.register(flagAdminRoutes, { flags: services.flags });
    await admin.register(announcementAdminRoutes, { announcements: services.announcements });
    await admin.register(topUpAdminRoutes, { topup: services.topup, catalog: services.catalog, payments: services.payments, audit: services.audit });
    await admin.register(fallbackAdminRoutes, { fallbacks: services.gateway.fallbacks, audit: services.audit });
    await admin.register(adminProviderRoutes, { catalog: services.catalog, accounts: services.gateway.accounts, audit: services.audit });
    await admin.register(adminModelRoutes, { catalog: services.catalog, audit: services.audit });
    await admin.register(catalogProviderCheckRoutes, { catalog: services.catalog, upstream: services.gateway.upstreamModels, clock: platform.clock });
    await admin.register(adminPlanRoutes, { plans: services.plans, audit: services.audit });
    await admin.register(adminCouponRoutes, { billing: services.subscriptionBilling, plans: services.plans, audit: services.audit });
  });
  for (const routes of [communityPostRoutes, communityFeedRoutes, communityWorkRoutes, communitySocialRoutes]) {
    await app.register(routes, { community: services.community, ensureActive });
  }

  if (config.adminEmail && config.adminPassword) {
    const outcome = await services.auth.ensureSuperAdmin(config.adminEmail, config.adminPassword);
    app.log.info({ email: config.adminEmail, outcome }, 'super admin ensured');
  }
  if (options.startJobs !== false) {
    await platform.jobs.start();
    services.webhooks.start();
  }
  // Stops the webhook rounds before the platform (registered last, so it runs first) stops the workers.
  app.addHook('onClose', async () => services.webhooks.stop());
  await app.ready();
  return { app, platform, services };
}
