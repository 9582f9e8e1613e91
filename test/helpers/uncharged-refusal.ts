import OpenAI from 'openai';
import { expect } from 'vitest';
import type { TestApp } from './test-app.js';
import { walletState } from './gateway.js';

type BadRequest = InstanceType<typeof OpenAI.BadRequestError>;

/**
 * Runs an `openai` SDK call that must be refused with a 400 naming `param`, and checks that the refusal cost nothing:
 * the wallet and its ledger unchanged, no upstream call made. Answers the error for further checks.
 */
export async function expectUnchargedOpenAiRefusal(
  t: TestApp,
  userId: string,
  upstreamCalls: () => number,
  run: () => Promise<unknown>,
  param: string,
): Promise<BadRequest> {
  const before = await walletState(t, userId);
  const calls = upstreamCalls();
  const err = await run().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  expect((err as BadRequest).param).toBe(param);
  expect(await walletState(t, userId)).toEqual(before);
  expect(upstreamCalls()).toBe(calls);
  return err as BadRequest;
}
