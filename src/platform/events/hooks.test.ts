import { describe, expect, it } from 'vitest';
import { assertWired, createHook, createPort } from './hooks.js';

describe('hooks', () => {
  it('runs the handlers one at a time, awaited, in subscription order, with the arguments as emitted', async () => {
    const hook = createHook<[tx: { id: string }, userId: string]>('account.accountDeleted', 'subscribe the modules that clean up');
    const tx = { id: 'tx-1' };
    const seen: string[] = [];
    hook.subscribe(async (handle, userId) => {
      await new Promise((resolve) => setTimeout(resolve, 10)); // a slow first handler still finishes first
      expect(handle).toBe(tx);
      seen.push(`first ${userId}`);
    });
    hook.subscribe(async (handle, userId) => {
      expect(handle).toBe(tx);
      seen.push(`second ${userId}`);
    });
    await hook.emit(tx, 'u1');
    expect(seen).toEqual(['first u1', 'second u1']);
  });

  it('stops at the first handler that throws and hands its error to the emitter unchanged', async () => {
    const hook = createHook<[string]>('account.accountDeleted', 'subscribe the modules that clean up');
    const refusal = new Error('owns a shared workspace');
    const ran: string[] = [];
    hook.subscribe(async () => void ran.push('a'));
    hook.subscribe(async () => {
      throw refusal;
    });
    hook.subscribe(async () => void ran.push('c'));
    await expect(hook.emit('u1')).rejects.toBe(refusal);
    expect(ran).toEqual(['a']);
  });

  it('does nothing without subscribers; unsubscribing removes exactly that handler', async () => {
    const hook = createHook<[]>('wallet.reservationSwept', "subscribe the gateway's recordSwept");
    await expect(hook.emit()).resolves.toBeUndefined();
    expect(hook.wired).toBe(false);
    const ran: string[] = [];
    const handler = async () => void ran.push('h');
    const first = hook.subscribe(handler);
    hook.subscribe(handler);
    expect(hook.wired).toBe(true);
    first();
    first(); // a second call removes nothing more
    await hook.emit();
    expect(ran).toEqual(['h']);
  });

  it('runs the handlers subscribed when the emit started, whatever they subscribe meanwhile', async () => {
    const hook = createHook<[]>('h', 'w');
    const ran: string[] = [];
    hook.subscribe(async () => {
      ran.push('a');
      hook.subscribe(async () => void ran.push('late'));
    });
    await hook.emit();
    expect(ran).toEqual(['a']);
  });
});

describe('ports', () => {
  it('answers with the connected provider; a connection hands back the way to restore the one before', () => {
    const port = createPort<() => string>('plans.liveChannels', 'connect the payments service');
    expect(port.current()).toBeNull();
    port.connect(() => 'real');
    const restore = port.connect(() => 'stand-in');
    expect(port.require()()).toBe('stand-in');
    restore();
    expect(port.require()()).toBe('real');
    port.disconnect();
    expect(port.wired).toBe(false);
  });

  it('refuses to answer while unconnected, saying what to wire', () => {
    const port = createPort<object>('subscriptionBilling.payments', 'connect payments.port');
    expect(() => port.require()).toThrow('subscriptionBilling.payments is not connected: connect payments.port.');
  });
});

describe('assertWired', () => {
  it('passes when every required seam is wired and otherwise names each unwired one with what to wire', () => {
    const swept = createHook<[]>('wallet.reservationSwept', "subscribe the gateway's recordSwept");
    const hints = createPort<object>('wallet.topUpHints', "connect the top-up module's hints");
    const live = createPort<object>('plans.liveChannels', 'connect payments.liveChannelSlugs');
    live.connect({});
    expect(() => assertWired([swept, hints, live])).toThrow(
      [
        'The composition root left 2 required hook(s) or port(s) unwired:',
        "- wallet.reservationSwept: subscribe the gateway's recordSwept",
        "- wallet.topUpHints: connect the top-up module's hints",
      ].join('\n'),
    );
    swept.subscribe(async () => undefined);
    hints.connect({});
    expect(() => assertWired([swept, hints, live])).not.toThrow();
  });
});
