import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { ChannelRow } from './channels.js';
import type { ChannelRuntime } from './gateways/index.js';
import type { CallbackInput } from './types.js';

/** What the parts of the payments module share. */
export interface PaymentsContext {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  channels: Map<string, ChannelRuntime>;
  /** The channels offered now: enabled, and running here (live, or in sandbox when sandbox is on), in display order. */
  offeredChannels(): Promise<ChannelRow[]>;
  /** The channel's row when it is offered (see offeredChannels); null otherwise. */
  channelRow(slug: string): Promise<ChannelRow | null>;
  callbackUrl(slug: string): string;
  /** Origins checkout's successUrl/cancelUrl may point at. */
  returnOrigins: string[];
  returnUrl(paymentId: string, result: 'success' | 'cancel' | 'fail'): string;
  sandboxPageUrl(paymentId: string): string;
  /** Proves a sandbox page link was handed out by us for this payment. */
  sandboxTokenValid(paymentId: string, token: string): boolean;
  /** Hands a gateway message to our webhook code (the sandbox gateways call back this way, server-side). */
  deliverCallback(slug: string, input: CallbackInput): Promise<void>;
}

export function pageTokens(serverSecret: string) {
  const sign = (paymentId: string) =>
    createHmac('sha256', serverSecret).update(`storefront/payments-sandbox-page/${paymentId}`).digest('base64url').slice(0, 32);
  return {
    sign,
    valid(paymentId: string, token: string) {
      const expected = Buffer.from(sign(paymentId));
      const given = Buffer.from(token);
      return expected.length === given.length && timingSafeEqual(expected, given);
    },
  };
}
