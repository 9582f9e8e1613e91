// A fake OpenAI-compatible upstream in its own process, for bench/gateway.bench.ts: it prints its base URL on stdout.
// Every chat completion answers at once with a fixed text and usage, so the bench measures the gateway, not a model.
import { startFakeOpenAi } from '../test/helpers/fake-upstreams.js';

const fake = await startFakeOpenAi(() => ({ kind: 'ok', text: 'Lighthouses guide ships safely to harbour.', usage: { inputTokens: 24, outputTokens: 8 } }));
process.stdout.write(`${JSON.stringify({ baseUrl: fake.baseUrl })}\n`);
const stop = () => void fake.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
