import { createServer, type Server } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../http/errors.js';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/**
 * The Prometheus registry of one service instance. Each module declares the series it owns through `counter`,
 * `histogram` and `gauge` (names `storefront_<module>_...`) with the metrics handed in by the composition root; a
 * module built without them (unit tests) gets a private registry nobody scrapes. Recording is in-process arithmetic.
 */
export interface Metrics {
  registry: Registry;
  counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L>;
  histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L>;
  /** A gauge whose value is usually computed at scrape time by `collect` (keep it cheap: one indexed query at most). */
  gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L>;
}

/** Latency buckets (seconds) from 5 ms to 2 minutes: HTTP routes and upstream AI calls both fit. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export function createMetrics(options: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  // A name declared twice on one registry (a service built twice on the same platform) reuses the first series.
  const existing = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  return {
    registry,
    counter: (config) => existing(config.name) ?? new Counter({ ...config, registers: [registry] }),
    histogram: (config) => existing(config.name) ?? new Histogram({ ...config, registers: [registry] }),
    gauge: (config) => existing(config.name) ?? new Gauge({ ...config, registers: [registry] }),
  };
}

/** The metrics a module was given, or a private registry when it was built without them. */
export const metricsOrPrivate = (metrics: Metrics | undefined): Metrics => metrics ?? createMetrics({ processMetrics: false });

export interface MetricsEndpoint {
  /** METRICS_TOKEN: the scrape must send `Authorization: Bearer <token>`; null leaves it open. */
  token: string | null;
  /** METRICS_PORT: serve /metrics on this port (next to the service's, while it listens) instead of the main one. */
  port: number | null;
  host: string;
}

const TOKEN_NEEDED = 'The metrics need `Authorization: Bearer <METRICS_TOKEN>`.';
const sha256 = (value: string) => createHash('sha256').update(value).digest();
/** Constant-time check of an Authorization header against the bearer token (hashes make the lengths equal). */
const authorized = (header: string | undefined, token: string | null) =>
  token === null || (header !== undefined && timingSafeEqual(sha256(header), sha256(`Bearer ${token}`)));

/**
 * Every request's latency by route pattern (not raw URL, which would explode label cardinality); its `_count` is the
 * request rate. /metrics is served on the main port, or on METRICS_PORT when set, behind METRICS_TOKEN when set.
 */
export function registerHttpMetrics(app: FastifyInstance, metrics: Metrics, endpoint: MetricsEndpoint = { token: null, port: null, host: '0.0.0.0' }): void {
  const duration = metrics.histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route pattern and status code (its _count is the request rate)',
    labelNames: ['method', 'route', 'status_code'],
    buckets: LATENCY_BUCKETS,
  });
  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  if (endpoint.port === null) {
    app.get('/metrics', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
      if (!authorized(request.headers.authorization, endpoint.token)) throw unauthorized(TOKEN_NEEDED);
      reply.header('content-type', metrics.registry.contentType);
      return metrics.registry.metrics();
    });
    return;
  }
  // The internal port opens when the service listens and closes with it; nothing else is served there.
  let server: Server | null = null;
  app.addHook('onListen', async () => {
    server = createMetricsServer(metrics, endpoint.token);
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(endpoint.port!, endpoint.host, () => resolve());
    });
    app.log.info({ port: endpoint.port }, 'metrics served on their own port');
  });
  app.addHook('onClose', async () => {
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
  });
}

function createMetricsServer(metrics: Metrics, token: string | null): Server {
  return createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'Only GET /metrics is served on this port.', details: null } }));
      return;
    }
    if (!authorized(request.headers.authorization, token)) {
      response
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
        .end(JSON.stringify({ error: { code: 'UNAUTHORIZED', message: TOKEN_NEEDED, details: null } }));
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(err)}`),
    );
  });
}
