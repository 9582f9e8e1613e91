// A fake OpenAI-compatible upstream in its own process, for bench/gateway.bench.ts: it prints its base URL on stdout.
// Every chat completion answers at once with a fixed text and usage, so the bench measures the gateway, not a model; a
// call with a reasoning effort reports 16 more output tokens, spent on reasoning, as OpenAI's reasoning models do.
import { startFakeOpenAi } from '../test/helpers/fake-upstreams.js';

const text = 'Lighthouses guide ships safely to harbour.';
const fake = await startFakeOpenAi((request) =>
  (request.body as { reasoning_effort?: string } | undefined)?.reasoning_effort === undefined
    ? { kind: 'ok', text, usage: { inputTokens: 24, outputTokens: 8 } }
    : { kind: 'ok', text, usage: { inputTokens: 24, outputTokens: 24 }, tokenClasses: { reasoning: 16 } },
);
process.stdout.write(`${JSON.stringify({ baseUrl: fake.baseUrl })}\n`);
const stop = () => void fake.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
