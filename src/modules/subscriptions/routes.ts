import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { IdParams, StrictObject, errorResponses } from '../../platform/http/schemas.js';
import type { SubscriptionBillingService } from './billing.js';
import {
  CouponPreview,
  CouponPreviewBody,
  parseRecurring,
  ScheduledSwitchCanceled,
  Subscription,
  SubscriptionList,
  SwitchBody,
  SwitchQuote,
  SwitchQuoteQuery,
  SwitchResponse,
  TrialBody,
} from './schemas.js';

export interface SubscriptionRoutesOptions {
  billing: SubscriptionBillingService;
}

const EmptyQuery = StrictObject({});

export const subscriptionRoutes: FastifyPluginAsyncTypebox<SubscriptionRoutesOptions> = async (app, { billing }) => {
  const tags = ['subscriptions'];
  const auth = { auth: 'required' } as const;
  const switchInput = (body: Static<typeof SwitchBody>) => ({ ...body, recurring: parseRecurring(body.recurring) });

  app.get(
    '/v1/subscriptions',
    {
      config: auth,
      schema: { tags, summary: 'Your subscriptions, newest first', querystring: EmptyQuery, response: { 200: SubscriptionList, ...errorResponses(400, 401) } },
    },
    async (request) => billing.list(principalOf(request).userId),
  );

  app.post(
    '/v1/subscriptions/trial',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Start the free trial of a plan (once per account)',
        body: TrialBody,
        response: { 201: Subscription, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await billing.startTrial(principalOf(request).userId, request.body.planId)),
  );

  app.post(
    '/v1/subscriptions/:id/cancel',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Cancel: future cycles stop, access continues until endsAt',
        params: IdParams,
        response: { 200: Subscription, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => billing.cancel(principalOf(request).userId, request.params.id),
  );

  for (const kind of ['upgrade', 'downgrade'] as const) {
    app.post(
      `/v1/subscriptions/:id/${kind}`,
      {
        config: auth,
        schema: {
          tags,
          summary: kind === 'upgrade' ? 'Upgrade to a dearer plan now, prorated' : 'Buy a cheaper (or equal) plan now, starting when the paid cycle ends',
          params: IdParams,
          body: SwitchBody,
          response: { 200: SwitchResponse, ...errorResponses(400, 401, 404, 409, 503) },
        },
      },
      async (request) => billing.switchPlan(principalOf(request).userId, switchInput(request.body), { subscriptionId: request.params.id, expectKind: kind }),
    );
  }

  app.get(
    '/v1/subscriptions/switch/quote',
    {
      config: auth,
      schema: {
        tags,
        summary: 'What a switch to the plan costs now and when it takes effect',
        querystring: SwitchQuoteQuery,
        response: { 200: SwitchQuote, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => billing.quote(principalOf(request).userId, request.query.planId),
  );

  app.post(
    '/v1/subscriptions/switch',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Switch plans (upgrade or downgrade); branch on the response',
        body: SwitchBody,
        response: { 200: SwitchResponse, ...errorResponses(400, 401, 404, 409, 503) },
      },
    },
    async (request) => billing.switchPlan(principalOf(request).userId, switchInput(request.body)),
  );

  app.delete(
    '/v1/subscriptions/:id/scheduled-switch',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Cancel an unpaid pending plan change',
        params: IdParams,
        response: { 200: ScheduledSwitchCanceled, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => billing.cancelScheduledSwitch(principalOf(request).userId, request.params.id),
  );

  app.post(
    '/v1/subscriptions/coupons/preview',
    {
      config: auth,
      schema: {
        tags,
        summary: 'The discount a code gives on a plan, without redeeming it',
        body: CouponPreviewBody,
        response: { 200: CouponPreview, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => billing.previewCoupon(principalOf(request).userId, request.body),
  );
};
