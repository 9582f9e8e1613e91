import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/http/errors.js';
import { createOutboundPolicy, type ResolveAddresses } from '../../../platform/net/outbound-policy.js';
import type { ChatMessage } from '../providers/types.js';
import { checkImageUrls } from './capabilities.js';

/**
 * The image URLs of a text request are checked against the outbound policy before any reservation: their hosts are
 * resolved together under one deadline. The resolver is a fake (the system's would need a network), injected through
 * the policy's `resolve`.
 */
const PUBLIC = '93.184.215.14';
const withImages = (...urls: string[]): ChatMessage[] => [
  { role: 'user', content: [{ type: 'text', text: 'look' }, ...urls.map((url) => ({ type: 'image' as const, source: { kind: 'url' as const, url } }))] },
];

/** A resolver answering after `delayMs`, never for the hosts in `hanging`; it counts the lookups in flight at once. */
function fakeResolver(delayMs: number, hanging: string[] = []) {
  const seen = { lookups: [] as string[], inFlight: 0, mostInFlight: 0 };
  const resolve: ResolveAddresses = async (hostname) => {
    seen.lookups.push(hostname);
    if (hanging.includes(hostname)) return new Promise(() => undefined);
    seen.inFlight++;
    seen.mostInFlight = Math.max(seen.mostInFlight, seen.inFlight);
    await new Promise((done) => setTimeout(done, delayMs));
    seen.inFlight--;
    return [{ address: PUBLIC, family: 4 }];
  };
  return { resolve, seen };
}

async function refusal(work: Promise<unknown>): Promise<AppError> {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('image URL checks', () => {
  it('resolves the distinct hosts concurrently, each once', async () => {
    const { resolve, seen } = fakeResolver(50);
    const urls = Array.from({ length: 20 }, (_, i) => `https://img${i % 10}.example.com/picture-${i}.png`);
    const started = performance.now();
    await checkImageUrls(createOutboundPolicy({ allowPrivateNetwork: false, resolve }), withImages(...urls));
    expect(seen.lookups.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `img${i}.example.com`).sort());
    expect(seen.mostInFlight).toBe(10);
    // One round of lookups, not ten (or twenty) in a row.
    expect(performance.now() - started).toBeLessThan(10 * 50);
  });

  it('refuses with a 400 naming the message and the host once the deadline passes, without waiting for the slow host', async () => {
    const { resolve } = fakeResolver(5, ['slow.example.com']);
    const messages = [...withImages('https://fast.example.com/a.png'), ...withImages('https://slow.example.com/b.png')];
    const started = performance.now();
    const err = await refusal(checkImageUrls(createOutboundPolicy({ allowPrivateNetwork: false, resolve }), messages, 100));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(err.statusCode).toBe(400);
    expect(err.message).toBe('The image URL in message 1 cannot be used: its host "slow.example.com" could not be resolved within 0.1 s.');
    expect(err.details).toEqual([{ field: 'messages.1.content', message: 'the image URL must be a public https address' }]);
  });

  it('still refuses a private or metadata address, naming the first such image in message order', async () => {
    const resolve: ResolveAddresses = async (hostname) => [{ address: hostname === 'inside.example.com' ? '169.254.169.254' : PUBLIC, family: 4 }];
    const messages = [...withImages('https://ok.example.com/a.png'), ...withImages('https://ok.example.com/b.png', 'https://inside.example.com/c.png')];
    const err = await refusal(checkImageUrls(createOutboundPolicy({ allowPrivateNetwork: false, resolve }), messages));
    expect(err.message).toMatch(
      /^The image URL in message 1 cannot be used: The address 169\.254\.169\.254 \(metadata\) of "inside\.example\.com" is not allowed/,
    );
  });

  it('passes messages without URL images without resolving anything', async () => {
    const { resolve, seen } = fakeResolver(5);
    await checkImageUrls(createOutboundPolicy({ allowPrivateNetwork: false, resolve }), [{ role: 'user', content: 'just text' }]);
    expect(seen.lookups).toEqual([]);
  });
});
