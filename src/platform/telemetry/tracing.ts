import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import pg from 'pg';
import type { TracingSettings } from './settings.js';

export interface Tracing {
  /** Sends the spans still buffered and stops; the process's tracer is a no-op afterwards. */
  shutdown(): Promise<void>;
}

/**
 * Starts OpenTelemetry tracing for the process when the settings ask for it, else does nothing at all: no provider,
 * no span processor, no instrumentation, and every span the code starts is the API's non-recording one.
 *
 * The OTLP/HTTP exporter (JSON) sends to the settings' endpoint and reads its headers and timeout from the standard
 * variables itself; the resource takes the service name and `OTEL_RESOURCE_ATTRIBUTES`. Outgoing HTTP (undici and
 * fetch: upstreams, webhooks, payment gateways) is traced by the official undici instrumentation through Node's diagnostics channels, and
 * PostgreSQL statements by the official pg instrumentation, applied to the `pg` module this process already loaded
 * (its loader hook would only see modules required later, and the bundle has loaded pg by then). The embedded
 * database runs in-process and has no statements on the wire to trace.
 */
export function startTracing(settings: TracingSettings, options: { exporter?: SpanExporter } = {}): Tracing | null {
  if (!settings.enabled) return null;
  const resource = resourceFromAttributes({ 'service.name': settings.serviceName }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(options.exporter ?? new OTLPTraceExporter({ url: settings.endpoint ?? undefined }))],
  });
  // The W3C trace-context propagator and the AsyncLocalStorage context manager.
  provider.register();

  const undici = new UndiciInstrumentation();
  undici.setTracerProvider(provider);
  undici.enable();
  // Statements only, inside a traced request or job (connection spans and the pool's background statements would
  // double the spans for nothing an operator reads); never the statements' values.
  const postgres = new PgInstrumentation({ enabled: false, enhancedDatabaseReporting: false, requireParentSpan: true, ignoreConnectSpans: true });
  postgres.setTracerProvider(provider);
  for (const definition of postgres.getModuleDefinitions()) definition.patch?.(definition.name === 'pg' ? pg : pg.Pool);

  return {
    async shutdown() {
      undici.disable();
      for (const definition of postgres.getModuleDefinitions()) definition.unpatch?.(definition.name === 'pg' ? pg : pg.Pool);
      await provider.shutdown();
      trace.disable();
    },
  };
}
