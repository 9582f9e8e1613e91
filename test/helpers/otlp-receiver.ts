import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProxyTracerProvider, trace } from '@opentelemetry/api';

/** One span as an OTLP/HTTP JSON export carries it, its attributes flattened to plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  scope: string;
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
const valueOf = (value: AnyValue): unknown => {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
};

/**
 * An OpenTelemetry collector's OTLP/HTTP traces endpoint (`POST /v1/traces`, JSON as the JS exporter sends it):
 * keeps every span it was sent, and answers as a collector does (200, an empty partial-success body).
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces' || !String(request.headers['content-type']).startsWith('application/json')) {
        response.writeHead(415, { 'content-type': 'application/json' }).end('{"code":3,"message":"only OTLP/HTTP JSON traces"}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resourceSpans of body.resourceSpans ?? []) {
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              status: span.status ?? {},
              attributes: Object.fromEntries((span.attributes ?? []).map((a: { key: string; value: AnyValue }) => [a.key, valueOf(a.value)])),
              scope: scopeSpans.scope?.name ?? '',
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** What OTEL_EXPORTER_OTLP_ENDPOINT points at. */
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    /** Makes the process's tracer provider export what it buffered (the batch processor waits seconds otherwise). */
    async flush() {
      const provider = trace.getTracerProvider();
      const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
      await (delegate as { forceFlush?: () => Promise<void> }).forceFlush?.();
    },
    /** The spans of one trace, by id. */
    trace: (traceId: string) => spans.filter((span) => span.traceId === traceId),
    children: (parent: ReceivedSpan) => spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
