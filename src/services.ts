import type { Platform } from './platform/platform.js';
import { createAuthService, createIdentityProvider } from './modules/auth/index.js';
import { createCatalogService } from './modules/catalog/service.js';
import { createPlansService } from './modules/plans/service.js';
import { createWalletService } from './modules/wallet/service.js';
import { createSubscriptionsService } from './modules/subscriptions/service.js';
import { derivePepper } from './platform/crypto/secrets.js';
import { createSecretBox } from './platform/crypto/sealed.js';
import { createOutboundPolicy } from './platform/net/outbound-policy.js';
import { createNotificationsService } from './modules/notifications/service.js';
import { createAccountService, unseenIpNotifier } from './modules/account/index.js';
import { createApiKeysService } from './modules/apikeys/service.js';
import { createLibraryService } from './modules/library/service.js';
import { createUsageService } from './modules/usage/service.js';
import { createFilesService } from './modules/files/service.js';
import { createJobsService } from './modules/jobs/service.js';
import { createDailyRequestLimit, createGatewayService, createMediaGateway } from './modules/gateway/index.js';
import { createPlaygroundService } from './modules/playground/service.js';
import { createSubscriptionBillingService, type ConfirmedPayment } from './modules/subscriptions/index.js';
import { createWebhooksService } from './modules/webhooks/service.js';
import { createWorkspacesService } from './modules/workspaces/service.js';
import { AppError } from './platform/http/errors.js';
import { createCommunityService } from './modules/community/service.js';
import { createPaymentsService } from './modules/payments/service.js';
import { createTopUpService } from './modules/topup/service.js';
import { createCompatService, createResponsesService } from './modules/compat/index.js';
import { createAuditService } from './modules/audit/service.js';
import { createFlagsService } from './modules/flags/service.js';
import { createAnnouncementsService } from './modules/announcements/service.js';
import { assertWired } from './platform/events/hooks.js';

/**
 * The composition root of the domain: every service built once, with exactly the dependencies it uses, in dependency
 * order. No closure here may use a service built further down (src/services.test.ts checks it): where two modules
 * talk both ways, the lower one owns a hook or port (platform/events/hooks.ts) that is subscribed or connected below,
 * once the higher one exists, and `assertWired` fails the start when one of them was left unwired.
 */
export function createServices(platform: Platform) {
  const { db, clock, tokens } = platform;
  const pepper = derivePepper(platform.config.jwtSecret);
  const logBackgroundError = (err: unknown) => platform.logger.error({ err }, 'background work failed');
  const notifications = createNotificationsService({ db, clock });
  const audit = createAuditService({ db, clock });
  const catalog = createCatalogService({ db, clock, events: platform.events });
  const plans = createPlansService({ db, clock, catalog, events: platform.events });
  const wallet = createWalletService({
    db,
    clock,
    tokensPerCredit: async () => (await catalog.pricingSettings()).tokensPerCredit,
    sweepIntervalMs: 15_000,
    onBackgroundError: logBackgroundError,
    metrics: platform.metrics,
  });
  const files = createFilesService({
    db,
    clock,
    storage: platform.storage,
    fetcher: platform.fetcher,
    publicBaseUrl: platform.config.publicBaseUrl,
    events: platform.events,
  });
  const subscriptions = createSubscriptionsService({
    db,
    clock,
    plans,
    wallet,
    events: platform.events,
    // The subscriber's own stored files (a workspace's members keep theirs).
    storageMbUsed: (owner) => files.storageMbUsed(owner.userId),
  });
  const auth = createAuthService({
    db,
    clock,
    tokens,
    events: platform.events,
    onUserCreated: [subscriptions.onUserCreated],
    onSignIn: [unseenIpNotifier(notifications)],
  });
  const idp = createIdentityProvider(platform.config.idp, { clock });
  // Trials, switches, coupons and the lifecycle; checkouts open through the payments port connected below.
  const subscriptionBilling = createSubscriptionBillingService({
    db,
    clock,
    plans,
    wallet,
    subscriptions,
    notifications,
    mailer: platform.mailer,
    userContact: async (userId) => {
      const user = await auth.getActiveUser(userId).catch((err: unknown) => {
        if (err instanceof AppError) return null; // deleted or suspended: nobody to write to
        throw err;
      });
      return user ? { email: user.email, name: user.name } : null;
    },
    frontendUrl: platform.config.frontendUrl,
    onSubscriptionChanged: (userId) => subscriptions.forgetCached(userId),
  });
  const payments = createPaymentsService({
    db,
    clock,
    logger: platform.logger,
    config: platform.config.payments,
    publicBaseUrl: platform.config.publicBaseUrl,
    frontendUrl: platform.config.frontendUrl,
    serverSecret: platform.config.jwtSecret,
    wallet,
    notifications,
    plans,
    billing: subscriptionBilling,
    metrics: platform.metrics,
  });
  // Plans show `payableWith` from the channels that run now.
  plans.liveChannels.connect(() => payments.liveChannelSlugs());
  // Subscriptions opens checkouts through the payments port; payments fulfils plan purchases through the handler
  // subscriptions registers (the top-ups module registers `topup` the same way).
  subscriptionBilling.payments.connect(payments.port);
  payments.registerFulfilment('subscription', (tx, payment) =>
    subscriptionBilling.fulfilSubscriptionPayment(tx, { ...payment, purpose: payment.purpose as unknown as ConfirmedPayment['purpose'] }),
  );
  const apiKeys = createApiKeysService({
    db,
    clock,
    plans: subscriptions,
    users: auth.data.users,
    events: platform.events,
    onBackgroundError: logBackgroundError,
    modelExists: async (slug) => (await catalog.getBySlug(slug)) !== undefined,
  });
  const usage = createUsageService({ db, clock, catalog });
  // Its events (deletion, blocks, profile visibility) are subscribed at the end, once every module that cleans up exists.
  const account = createAccountService({
    db,
    clock,
    mailer: platform.mailer,
    storage: platform.storage,
    jobs: platform.jobs,
    pepper,
    frontendUrl: platform.config.frontendUrl,
    publicBaseUrl: platform.config.publicBaseUrl,
    notifications,
    auth: auth.data,
    events: platform.events,
    twoFactor: auth.twoFactor,
  });
  const library = createLibraryService({
    db,
    clock,
    catalog,
    preferences: { defaultGenerationVisibility: async (userId, tx) => (await account.profile.getPreferences(userId, tx)).defaultGenerationVisibility },
  });
  // What the text and media gateways both meter with: the model, the caller's plan, the wallet, the usage record and the library item.
  const meteringDeps = {
    db,
    clock,
    logger: platform.logger,
    catalog,
    subscriptions,
    plans,
    wallet,
    usage,
    library,
    dailyRequests: createDailyRequestLimit({ clock, wallet }),
  };
  const gateway = createGatewayService({
    ...meteringDeps,
    keys: apiKeys,
    metrics: platform.metrics,
    providers: platform.config.providers,
    captureContent: platform.config.tracing.captureMessageContent,
    secrets: createSecretBox(platform.config.secretsEncryptionKey),
    events: platform.events,
    outbound: createOutboundPolicy({ allowPrivateNetwork: platform.config.allowPrivateNetwork }),
  });
  // When the sweeper closes a reservation a crash left open, the gateway writes its usage record in the sweeper's transaction.
  wallet.reservationSwept.subscribe((tx, swept) => gateway.recordSwept(tx, swept));
  const jobs = createJobsService({ db, clock, events: platform.events, logger: platform.logger, wallet, metrics: platform.metrics });
  const media = createMediaGateway({
    ...meteringDeps,
    files,
    notifications,
    jobs,
    queue: platform.jobs,
    fetcher: platform.fetcher,
    pool: gateway.pool,
    adapters: gateway.mediaAdapters,
    metering: gateway.metering,
    idempotency: gateway.idempotency,
  });
  // Outgoing webhooks: fed by the domain-event outbox only; every delivery goes through the SSRF-safe fetcher.
  const webhooks = createWebhooksService({
    db,
    clock,
    fetcher: platform.fetcher,
    queue: platform.jobs,
    logger: platform.logger,
    allowPrivateNetwork: platform.config.allowPrivateNetwork,
    metrics: platform.metrics,
  });
  const workspaces = createWorkspacesService({ db, clock, users: auth.data.users, subscriptions });
  // Members of a workspace with a subscription meter against it.
  subscriptions.workspaceMemberships.connect((userId, tx) => workspaces.workspaceIdsOf(userId, tx));
  const community = createCommunityService({
    db,
    clock,
    events: platform.events,
    users: auth.data.users,
    generations: library.generations,
    blocks: account.blocks,
    audience: account.profile,
    notifications,
    frontendUrl: platform.config.frontendUrl,
    metrics: platform.metrics,
  });
  account.addExportSection(community.exportSection);
  // Top-ups price with the catalog's token settings, the channels payments runs and facts about the customer.
  const topup = createTopUpService({
    db,
    clock,
    tokenSettings: async () => catalog.pricingSettings(),
    channels: async () => payments.amountRules(),
    accountCreatedAt: async (userId) => {
      const user = await auth.getActiveUser(userId).catch((err: unknown) => {
        if (err instanceof AppError) return null; // deleted or suspended: priced as anonymous
        throw err;
      });
      return user?.createdAt ?? null;
    },
    orderPorts: {
      openPayment: (input) =>
        payments.openPayment({ ...input, purpose: { kind: 'topup', orderId: input.orderId }, purposeRef: input.orderId, recurring: false }),
      paymentOf: async (userId, paymentId) => {
        const payment = await payments.get(userId, paymentId);
        return { id: payment.id, status: payment.status, provider: payment.provider, paidAt: payment.paidAt };
      },
      creditWallet: async (tx, input) => void (await wallet.credit(input, tx)),
    },
    paymentSummaries: (paymentIds) => payments.summaries(paymentIds),
    events: platform.events,
    onBackgroundError: logBackgroundError,
  });
  // Payments fulfils a paid top-up through the handler the top-ups module registers (tokens and bonus, exactly once).
  payments.registerFulfilment('topup', (tx, payment) => topup.fulfil(tx, payment));
  // The wallet's QUOTA_EXCEEDED suggests a top-up of the shortfall and QUOTA_WARNING warns, from the top-up terms' cache.
  wallet.topUpHints.connect({
    suggest: async (shortfallTokens, cachedOnly) => topup.suggestTopUp(shortfallTokens, cachedOnly ? topup.peekTerms() : await topup.terms()),
    lowBalanceThresholdTokens: () => topup.peekTerms()?.lowBalanceThresholdTokens ?? null,
    warn: async (tx, warning) =>
      void (await notifications.notify(tx, { userId: warning.userId, ...topup.lowBalanceNotice(warning.balanceTokens, warning.thresholdTokens) })),
  });
  // The OpenAI- and Anthropic-compatible surfaces over the gateway.
  const compat = createCompatService({ clock, gateway, media, files, catalog, plans, subscriptions, apiKeys, wallet });
  // OpenAI's Responses API over the same gateway, with its stored responses.
  const responses = createResponsesService({ db, clock, logger: platform.logger, gateway, subscriptions, files });
  // The admin playground: runs through the gateway as its internal identity.
  const playground = createPlaygroundService({ db, clock, auth, plans, subscriptions, wallet, catalog, gateway, media, jobs, files, library });
  // Feature flags evaluated per viewer: targeting by plan reads the plan the viewer meters against.
  const planSlugOf = async (userId: string) => {
    const planId = await subscriptions.activePlanId(userId);
    return planId ? ((await plans.getById(planId))?.slug ?? null) : null;
  };
  const planExists = async (slug: string) => (await plans.getBySlug(slug)) !== undefined;
  const flags = createFlagsService({ db, clock, audit, events: platform.events, planOf: planSlugOf, planExists });
  const announcements = createAnnouncementsService({
    db,
    clock,
    audit,
    notifications,
    queue: platform.jobs,
    events: platform.events,
    planOf: planSlugOf,
    planExists,
    userIdsAfter: (afterId, limit) => auth.data.users.activeUserIdsAfter(afterId, limit),
  });
  // Work of other modules in the account's transactions, in this order: workspace memberships ended (first: it refuses
  // the deletion while the account owns a workspace that others share), API keys revoked, webhooks disabled, posts and
  // works hidden, stored responses dropped. A block drops the follows between the two users; the author's posts and
  // works take a new profileVisibility.
  account.accountDeleted.subscribe((tx, user) => workspaces.onAccountDeleted(tx, user.id));
  account.accountDeleted.subscribe(async (tx, user) => void (await apiKeys.revokeAllForUser(user.id, tx)));
  account.accountDeleted.subscribe((tx, user) => webhooks.disableAllForUser(user.id, tx));
  account.accountDeleted.subscribe((tx, user, at) => community.onAccountDeleted(tx, user.id, at));
  account.accountDeleted.subscribe((tx, user) => responses.onAccountDeleted(tx, user.id));
  account.userBlocked.subscribe((tx, blockerId, blockedId) => community.onUserBlocked(tx, blockerId, blockedId));
  account.profileVisibilityChanged.subscribe((tx, userId, visibility) => community.onProfileVisibilityChanged(tx, userId, visibility));
  assertWired([
    plans.liveChannels,
    wallet.reservationSwept,
    wallet.topUpHints,
    subscriptions.workspaceMemberships,
    subscriptionBilling.payments,
    payments.fulfilment('subscription'),
    payments.fulfilment('topup'),
    account.accountDeleted,
    account.userBlocked,
    account.profileVisibilityChanged,
  ]);
  return {
    audit,
    flags,
    announcements,
    catalog,
    plans,
    wallet,
    subscriptions,
    subscriptionBilling,
    payments,
    topup,
    auth,
    notifications,
    idp,
    account,
    apiKeys,
    usage,
    library,
    gateway,
    files,
    jobs,
    media,
    webhooks,
    workspaces,
    community,
    compat,
    responses,
    playground,
  };
}

export type Services = ReturnType<typeof createServices>;
