import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/http/errors.js';
import { runWithFallbacks } from './fallback-loop.js';

/** A call as prepared for one model; `from` is the model it was switched from. */
interface Call {
  model: string;
  from?: string;
}

const down = (model: string) => new AppError(503, 'PROVIDER_UNAVAILABLE', `every account of ${model} failed`);

/**
 * A loop over `answers` (what each model's upstream call gives: a value, or an error to throw) that records what it
 * was asked. `switchErrors` are what switching to a model throws; a model in `gone` no longer exists.
 */
function scenario(options: { answers: Record<string, string | Error>; fallbacks: string[]; switchErrors?: Record<string, Error>; gone?: string[] }) {
  const attempts: string[] = [];
  const switches: Array<{ from: string; to: string; firstError: unknown }> = [];
  const failures: Array<{ on: Call; err: unknown }> = [];
  const skipLog: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info', base: null, timestamp: false }, { write: (line: string) => skipLog.push(JSON.parse(line) as Record<string, unknown>) });
  let idsRead = 0;
  const run = () =>
    runWithFallbacks<Call, string>({
      first: { model: 'primary' },
      fallbackIds: async () => {
        idsRead += 1;
        return options.fallbacks;
      },
      attempt: async (call) => {
        attempts.push(call.model);
        const answer = options.answers[call.model];
        if (answer === undefined) throw new Error(`no answer set for ${call.model}`);
        if (answer instanceof Error) throw answer;
        return answer;
      },
      switchTo: async (call, fallbackId, firstError) => {
        switches.push({ from: call.model, to: fallbackId, firstError });
        const refusal = options.switchErrors?.[fallbackId];
        if (refusal) throw refusal;
        return options.gone?.includes(fallbackId) ? null : { model: fallbackId, from: call.from ?? call.model };
      },
      fail: async (on, err) => {
        failures.push({ on, err });
        return new AppError(502, 'REFUNDED', `refunded after: ${(err as Error).message}`);
      },
      skipped: {
        logger,
        requestId: 'req-1',
        message: 'fallback model cannot take the call; trying the next',
      },
    });
  return { run, attempts, switches, failures, skipLog, idsRead: () => idsRead };
}

describe('runWithFallbacks', () => {
  it('answers from the first model when it succeeds, without reading the fallbacks', async () => {
    const s = scenario({ answers: { primary: 'from primary' }, fallbacks: ['b'] });
    await expect(s.run()).resolves.toEqual({ p: { model: 'primary' }, value: 'from primary' });
    expect(s.idsRead()).toBe(0);
    expect(s.switches).toEqual([]);
    expect(s.failures).toEqual([]);
  });

  it('moves to the first fallback when the provider is down, switching with the first error', async () => {
    const firstError = down('primary');
    const s = scenario({ answers: { primary: firstError, b: 'from b', c: 'from c' }, fallbacks: ['b', 'c'] });
    await expect(s.run()).resolves.toEqual({ p: { model: 'b', from: 'primary' }, value: 'from b' });
    expect(s.attempts).toEqual(['primary', 'b']);
    expect(s.switches).toEqual([{ from: 'primary', to: 'b', firstError }]);
    expect(s.failures).toEqual([]);
  });

  it('skips a fallback that cannot take the call (logged at info) and one that is gone, and uses the next', async () => {
    const s = scenario({
      answers: { primary: down('primary'), d: 'from d' },
      fallbacks: ['b', 'c', 'd'],
      switchErrors: { b: new AppError(403, 'MODEL_NOT_ALLOWED', 'not on this plan') },
      gone: ['c'],
    });
    await expect(s.run()).resolves.toEqual({ p: { model: 'd', from: 'primary' }, value: 'from d' });
    expect(s.attempts).toEqual(['primary', 'd']);
    expect(s.switches.map((sw) => sw.to)).toEqual(['b', 'c', 'd']);
    expect(s.skipLog).toEqual([
      { level: 30, requestId: 'req-1', fallback: 'b', code: 'MODEL_NOT_ALLOWED', msg: 'fallback model cannot take the call; trying the next' },
    ]);
  });

  it('stops at an error that is not the provider being down and fails the call on the model it ran on', async () => {
    const refused = new AppError(400, 'BAD_REQUEST', 'the fallback rejected the request');
    const s = scenario({ answers: { primary: down('primary'), b: refused, c: 'from c' }, fallbacks: ['b', 'c'] });
    await expect(s.run()).rejects.toMatchObject({ code: 'REFUNDED', message: 'refunded after: the fallback rejected the request' });
    expect(s.attempts).toEqual(['primary', 'b']);
    expect(s.failures).toEqual([{ on: { model: 'b', from: 'primary' }, err: refused }]);
  });

  it('does not read the fallbacks when the first error is not the provider being down', async () => {
    const refused = new AppError(400, 'BAD_REQUEST', 'bad request');
    const s = scenario({ answers: { primary: refused }, fallbacks: ['b'] });
    await expect(s.run()).rejects.toMatchObject({ code: 'REFUNDED' });
    expect(s.idsRead()).toBe(0);
    expect(s.failures).toEqual([{ on: { model: 'primary' }, err: refused }]);
  });

  it('fails once, with the last error, on the last model tried when every fallback is down too', async () => {
    const lastError = down('c');
    const s = scenario({ answers: { primary: down('primary'), b: down('b'), c: lastError }, fallbacks: ['b', 'c'] });
    await expect(s.run()).rejects.toMatchObject({ code: 'REFUNDED', message: 'refunded after: every account of c failed' });
    expect(s.attempts).toEqual(['primary', 'b', 'c']);
    expect(s.switches.map((sw) => `${sw.from}->${sw.to}`)).toEqual(['primary->b', 'b->c']);
    expect(s.failures).toEqual([{ on: { model: 'c', from: 'primary' }, err: lastError }]);
  });

  it('fails with the first error when no fallbacks are configured', async () => {
    const firstError = down('primary');
    const s = scenario({ answers: { primary: firstError }, fallbacks: [] });
    await expect(s.run()).rejects.toMatchObject({ code: 'REFUNDED' });
    expect(s.idsRead()).toBe(1);
    expect(s.switches).toEqual([]);
    expect(s.failures).toEqual([{ on: { model: 'primary' }, err: firstError }]);
  });

  it('fails with the first error on the first model when no fallback can take the call', async () => {
    const firstError = down('primary');
    const s = scenario({
      answers: { primary: firstError },
      fallbacks: ['b'],
      switchErrors: { b: new AppError(429, 'QUOTA_EXCEEDED', 'no room to raise the hold') },
    });
    await expect(s.run()).rejects.toMatchObject({ code: 'REFUNDED' });
    expect(s.attempts).toEqual(['primary']);
    expect(s.failures).toEqual([{ on: { model: 'primary' }, err: firstError }]);
  });

  it('lets an error that is not an AppError while switching propagate as it is, without failing the call', async () => {
    const broken = new Error('the catalog query failed');
    const s = scenario({ answers: { primary: down('primary') }, fallbacks: ['b'], switchErrors: { b: broken } });
    await expect(s.run()).rejects.toBe(broken);
    expect(s.failures).toEqual([]);
    expect(s.skipLog).toEqual([]);
  });
});
