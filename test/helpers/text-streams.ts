import type { TextStream, TextStreamEvent } from '../../src/modules/gateway/providers/types.js';

/** A short conversation the adapter tests send. */
export const messages = [
  { role: 'system' as const, content: 'Be brief.' },
  { role: 'user' as const, content: 'Tell me about lighthouses and their keepers' },
];

export async function collect(stream: TextStream): Promise<TextStreamEvent[]> {
  const events: TextStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

export async function collectUntilError(stream: TextStream): Promise<{ events: TextStreamEvent[]; error: unknown }> {
  const events: TextStreamEvent[] = [];
  try {
    for await (const event of stream) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events, error: null };
}

export const textOf = (events: TextStreamEvent[]) => events.map((e) => (e.type === 'text' ? e.delta : '')).join('');
