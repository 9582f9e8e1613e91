import { parseSse, type SseEvent } from './gateway.js';

/**
 * Follows a job's server-sent events (`GET /v1/jobs/:id/stream`) while `drive` moves the job by hand: `drive` runs once
 * the stream shows the job QUEUED, and the events are returned when the stream ends (the job's final state).
 */
export async function jobEventsWhile(address: string, jobId: string, accessToken: string, drive: () => Promise<void>): Promise<SseEvent[]> {
  const stream = await fetch(`${address}/v1/jobs/${jobId}/stream`, { headers: { authorization: `Bearer ${accessToken}` } });
  const reader = stream.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('"QUEUED"')) text += decoder.decode((await reader.read()).value, { stream: true });
  await drive();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return parseSse(text);
}
