import { createServer, type Server } from 'node:http';

/** One request a client made through the recording proxy, with the status and the answer it got. */
export interface SeenRequest<Body = string> {
  method: string;
  url: string;
  status: number;
  body: Body;
  answer: string;
  /** The gateway's `x-ai-request-id` and `x-storefront-ignored` answer headers. */
  requestId: string | null;
  ignored: string | null;
}

const REQUEST_HEADERS_DROPPED = ['host', 'connection', 'content-length', 'transfer-encoding'];
// fetch decodes what it reads, so the answer goes on decoded and without its encoding.
const ANSWER_HEADERS_DROPPED = ['connection', 'content-length', 'transfer-encoding', 'content-encoding'];

/**
 * Forwards to `target` as is (the answer streamed through) and notes each request in `seen`, its body as `readBody`
 * makes it, so a client configured only with a base URL is still seen whole by the test.
 */
export function recordingProxy<Body>(target: string, seen: SeenRequest<Body | string>[], readBody: (raw: string) => Body): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !REQUEST_HEADERS_DROPPED.includes(name))) as Record<string, string>;
      void fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length ? body : undefined })
        .then(async (upstream) => {
          const noted: SeenRequest<Body | string> = {
            method: req.method ?? '',
            url: req.url ?? '',
            status: upstream.status,
            body: readBody(body.toString('utf8')),
            answer: '',
            requestId: upstream.headers.get('x-ai-request-id'),
            ignored: upstream.headers.get('x-storefront-ignored'),
          };
          seen.push(noted);
          const out: Record<string, string> = {};
          upstream.headers.forEach((value, name) => {
            if (!ANSWER_HEADERS_DROPPED.includes(name)) out[name] = value;
          });
          res.writeHead(upstream.status, out);
          if (upstream.body) {
            for await (const chunk of upstream.body) {
              res.write(chunk);
              noted.answer += Buffer.from(chunk as Uint8Array).toString('utf8');
            }
          }
          res.end();
        })
        .catch((err: unknown) => {
          seen.push({ method: req.method ?? '', url: req.url ?? '', status: 599, body: String(err), answer: '', requestId: null, ignored: null });
          res.destroy();
        });
    });
  });
}
