import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's server span (a non-recording one while tracing is off). */
    span: Span | null;
  }
}

/** Asked for each time: a tracer kept from before a provider was registered (or replaced) would export nowhere. */
const tracer = () => trace.getTracer('storefront-http');

/**
 * One SERVER span per HTTP request, named and attributed by the OpenTelemetry HTTP conventions, child of the caller's
 * `traceparent` when it sent one; the rest of the request (hooks, handler, and through them database statements,
 * upstream calls and the GenAI spans) runs in its context, so every span it starts is a child. Registered only while
 * tracing is on: off, requests pay nothing. The request's logger carries the trace and span ids.
 */
export function registerHttpSpans(app: FastifyInstance): void {
  app.decorateRequest('span', null);
  app.addHook('onRequest', (request, reply, done) => {
    const parent = propagation.extract(context.active(), request.headers);
    const route = request.routeOptions.url;
    const span = tracer().startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0],
          'url.scheme': request.protocol,
          ...(route ? { 'http.route': route } : {}),
          'client.address': request.ip,
          'user_agent.original': request.headers['user-agent'] ?? '',
          'storefront.request_id': request.id,
        },
      },
      parent,
    );
    request.span = span;
    // The socket's response closing ends the span: after the last byte, or when the client left (a stream), and for
    // hijacked (streamed) replies too, which Fastify's onResponse hooks do not see.
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (!reply.raw.writableFinished) span.setAttribute('storefront.client_aborted', true);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    const { traceId, spanId } = span.spanContext();
    request.log = reply.log = request.log.child({ trace_id: traceId, span_id: spanId });
    // The hooks and the handler run from `done`: inside this context, so what they start has this span as parent.
    context.with(trace.setSpan(parent, span), done);
  });
}
