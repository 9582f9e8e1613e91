// The in-run reference of bench/gateway.bench.ts: a bare Fastify + undici forwarder in its own process. It takes the
// gateway's request shape, sends it to the same fake upstream as an OpenAI chat completion and answers the text and
// usage: what a gateway costs with no accounts, wallet or database. Prints its base URL on stdout once it listens.
import Fastify from 'fastify';
import { Pool } from 'undici';

const upstreamBaseUrl = process.env.UPSTREAM_BASE_URL;
if (!upstreamBaseUrl) throw new Error('UPSTREAM_BASE_URL is required');
const upstream = new URL(upstreamBaseUrl);
const pool = new Pool(upstream.origin, { connections: 128, pipelining: 1 });
const completionsPath = `${upstream.pathname.replace(/\/$/, '')}/chat/completions`;

interface TextBody {
  model: string;
  messages: { role: string; content: string }[];
  maxTokens?: number;
}

const app = Fastify({ logger: false });
app.post<{ Body: TextBody }>('/v1/ai/text', async (request) => {
  const response = await pool.request({
    method: 'POST',
    path: completionsPath,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.UPSTREAM_API_KEY ?? 'sk-bench'}` },
    body: JSON.stringify({ model: request.body.model.split('/').pop(), messages: request.body.messages, max_completion_tokens: request.body.maxTokens }),
  });
  const completion = (await response.body.json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { prompt_tokens: number; completion_tokens: number } };
  return {
    text: completion.choices[0]?.message.content ?? '',
    usage: { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens },
    finishReason: completion.choices[0]?.finish_reason ?? 'stop',
  };
});

const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ baseUrl: address })}\n`);
const stop = () => void Promise.all([app.close(), pool.close()]).then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
