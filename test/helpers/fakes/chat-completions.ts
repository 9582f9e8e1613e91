import {
  chunks,
  defaultText,
  promptTokens,
  readJson,
  sleep,
  start,
  tokensOf,
  type Decide,
  type FakeRequest,
  type FakeUpstream,
  type TokenClasses,
} from './text-server.js';

/**
 * The chat-completions server under every OpenAI-compatible fake: OpenAI's wire format (JSON, and SSE ending with
 * `data: [DONE]`, usage only when `stream_options.include_usage` is asked for), with the request checks and stream
 * usage of one provider's `OpenAiDialect`. OpenAI's own dialect is in `providers/openai/openai.fake.ts`; each other
 * provider's is in its folder.
 */

/** A dialect's refusal of a request body: the status and body the real API answers, or null when it takes it. */
export type Refusal = { status: number; body: unknown } | null;

/**
 * What sets an OpenAI-compatible API apart from OpenAI's: `refuse`, the refusal of a chat request's body in the API's
 * own status and error shape, or null when the API takes it; `streamUsage`, usage sent unasked on the finish chunk, at
 * its top level (Mistral, Together...) or in `x_groq` (Groq).
 */
export interface OpenAiDialect {
  refuse?: (body: any) => Refusal;
  streamUsage?: 'finish' | 'x_groq';
}

const OPENAI_ERRORS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  401: {
    message: 'Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  },
  403: { message: 'Project `proj_fake` does not have access to model `gpt-fake`', type: 'invalid_request_error', code: 'model_not_found' },
  404: { message: 'The model `gpt-fake` does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
  429: { message: 'Rate limit reached for requests. Please try again in 20ms.', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null },
  503: { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null },
};

/** The usage details of `classes` in the dialect's fields; none without classes (as servers that send no details). */
function openAiUsageDetails(promptTokens: number, classes: TokenClasses | undefined): Record<string, unknown> {
  if (!classes) return {};
  const cached = classes.cached ?? 0;
  const reasoning = {
    completion_tokens_details: { reasoning_tokens: classes.reasoning ?? 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
  if (classes.dialect === 'deepseek')
    return { prompt_cache_hit_tokens: cached, prompt_cache_miss_tokens: promptTokens - cached, ...(classes.reasoning ? reasoning : {}) };
  const cacheWrite = classes.dialect === 'openrouter' ? { cache_write_tokens: classes.cacheWrite ?? 0 } : {};
  return { prompt_tokens_details: { cached_tokens: cached, ...cacheWrite, audio_tokens: 0 }, ...reasoning };
}

/** Models that take `reasoning_effort`: OpenAI's o-series and gpt-5, xAI's grok-3-mini, the gpt-oss models. */
const REASONING_MODELS = /^(o\d|gpt-5|grok-3-mini)|gpt-oss/;

/** A chat-completions API (`/v1`) that checks requests as `dialect` does, then answers as `decide` says (default: ok). */
export function startChatCompletions(dialect: OpenAiDialect, decide: Decide = () => ({ kind: 'ok' })): Promise<FakeUpstream> {
  return start(
    async (req, res, state) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const auth = req.headers.authorization ?? '';
      const apiKey = auth.startsWith('Bearer ') ? auth.slice(7) : null;
      const body = req.method === 'POST' ? await readJson(req) : null;
      const request: FakeRequest = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, apiKey, body };
      state.requests.push(request);

      const behavior = await state.decide(request);
      const error = (status: number, override?: unknown, message?: string) => {
        const known = OPENAI_ERRORS[status] ?? { message: `Error ${status}`, type: 'server_error', code: null };
        res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_fake' });
        res.end(JSON.stringify(override ?? { error: { ...known, message: message ?? known.message, param: null } }));
      };

      if (req.method === 'GET' && url.pathname === '/v1/models') {
        if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'gpt-fake', object: 'model', created: 1700000000, owned_by: 'fake' }] }));
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: `Unknown request URL: ${req.method} ${url.pathname}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' },
          }),
        );
        return;
      }
      const refusal = dialect.refuse?.(body);
      if (refusal) return error(refusal.status, refusal.body);
      if (behavior.kind === 'hang') return; // never answers; the socket is destroyed on close
      if (behavior.kind === 'error') return error(behavior.status, behavior.body, behavior.message);
      // As OpenAI (and the compatible servers of xAI and Groq) do: an effort only for the models that reason.
      if (body.reasoning_effort !== undefined && !REASONING_MODELS.test(String(body.model))) {
        res.writeHead(400, { 'content-type': 'application/json', 'x-request-id': 'req_fake' });
        res.end(
          JSON.stringify({
            error: {
              message: `Unsupported parameter: 'reasoning_effort' is not supported with this model.`,
              type: 'invalid_request_error',
              param: 'reasoning_effort',
              code: 'unsupported_parameter',
            },
          }),
        );
        return;
      }

      const id = `chatcmpl-${Math.random().toString(36).slice(2, 12)}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model;
      const toolCalls = behavior.kind === 'ok' ? behavior.toolCalls : undefined;
      const refusalText = behavior.kind === 'ok' ? behavior.refusal : undefined;
      const text = behavior.text ?? (toolCalls || refusalText ? '' : defaultText(body));
      const limit = body.max_completion_tokens ?? body.max_tokens;
      const usage =
        behavior.kind === 'ok' && typeof behavior.usage === 'object'
          ? { prompt_tokens: behavior.usage.inputTokens, completion_tokens: behavior.usage.outputTokens }
          : {
              prompt_tokens: promptTokens(body),
              completion_tokens:
                tokensOf(text) + tokensOf(refusalText ?? '') + (toolCalls ?? []).reduce((sum, c) => sum + tokensOf(c.name) + tokensOf(c.arguments), 0),
            };
      const usageBlock = {
        ...usage,
        total_tokens: usage.prompt_tokens + usage.completion_tokens,
        ...openAiUsageDetails(usage.prompt_tokens, behavior.kind === 'ok' ? behavior.tokenClasses : undefined),
      };
      const sendUsage = behavior.kind === 'ok' && behavior.usage !== 'none';

      if (behavior.kind === 'ok') {
        if (behavior.waitFor) await behavior.waitFor;
        if (behavior.delayMs) await sleep(behavior.delayMs);
      }

      if (!body.stream) {
        if (behavior.kind !== 'ok') return error(500);
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_fake' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: (toolCalls || refusalText) && !text ? null : text,
                  refusal: refusalText ?? null,
                  ...(toolCalls
                    ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
                    : {}),
                },
                logprobs: null,
                finish_reason: behavior.finishReason ?? (toolCalls ? 'tool_calls' : limit && usage.completion_tokens >= limit ? 'length' : 'stop'),
              },
            ],
            ...(sendUsage ? { usage: usageBlock } : {}),
            system_fingerprint: 'fp_fake',
          }),
        );
        return;
      }

      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': 'req_fake' });
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
        send({
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          system_fingerprint: 'fp_fake',
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          ...extra,
        });
      chunk(refusalText && !text ? { role: 'assistant', content: null, refusal: '' } : { role: 'assistant', content: '' }, null);
      const pieces = text ? chunks(text) : [];
      const delay = behavior.chunkDelayMs ?? 0;
      for (let i = 0; i < pieces.length; i++) {
        if (behavior.kind === 'midway' && i === behavior.afterChunks) {
          if (behavior.how === 'disconnect') {
            await sleep(30); // let what was written reach the client before the connection drops
            res.socket?.destroy();
            return;
          }
          if (behavior.how === 'error-event')
            send({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } });
          res.end();
          return;
        }
        if (behavior.kind === 'ok' && behavior.pauseAfter && i === behavior.pauseAfter.chunks) await behavior.pauseAfter.until;
        chunk({ content: pieces[i] }, null);
        if (delay) await sleep(delay);
        if (res.destroyed) return;
      }
      for (const piece of refusalText ? chunks(refusalText) : []) chunk({ refusal: piece }, null);
      // Tool calls as OpenAI streams them: a first chunk with id, type and name per call, then argument pieces by index.
      for (const [index, call] of (toolCalls ?? []).entries()) {
        chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null);
        const half = Math.ceil(call.arguments.length / 2);
        for (const piece of [call.arguments.slice(0, half), call.arguments.slice(half)])
          if (piece) chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null);
      }
      const unasked = !sendUsage
        ? {}
        : dialect.streamUsage === 'finish'
          ? { usage: usageBlock }
          : dialect.streamUsage === 'x_groq'
            ? { x_groq: { id: 'req_fake', usage: usageBlock } }
            : {};
      chunk({}, behavior.kind === 'ok' ? (behavior.finishReason ?? (toolCalls ? 'tool_calls' : 'stop')) : 'stop', unasked);
      if (sendUsage && body.stream_options?.include_usage) {
        send({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices: [], usage: usageBlock });
      }
      res.write('data: [DONE]\n\n');
      res.end();
    },
    '/v1',
    decide,
  );
}
