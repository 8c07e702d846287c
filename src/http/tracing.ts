import { type Span, SpanStatusCode } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { endSpan, startServerSpan, within } from '../lib/tracing.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's server span, while tracing is on (docs/tracing.md). */
    span?: Span | undefined;
  }
}

/**
 * A server span per request, continuing the caller's W3C `traceparent`. Registered only when tracing is on, so
 * it costs nothing otherwise. The span becomes the active one just before the handler (after the body is read:
 * the body's stream events would not carry it), so the spans the handler's work starts are its children.
 * Attributes: the method, the route's template (never the URL, whose query may hold a token) and the status.
 */
export function registerTracing(app: FastifyInstance): void {
  app.addHook('onRequest', (req, _reply, done) => {
    const route = req.routeOptions.url;
    req.span = startServerSpan(route ? `${req.method} ${route}` : req.method, req.headers.traceparent, {
      'http.request.method': req.method,
      ...(route ? { 'http.route': route } : {}),
    });
    done();
  });
  app.addHook('preHandler', (req, _reply, done) => within(req.span, done));
  app.addHook('onResponse', (req, reply, done) => {
    const span = req.span;
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', String(reply.statusCode));
      }
      span.end();
      req.span = undefined;
    }
    done();
  });
  app.addHook('onRequestAbort', (req: FastifyRequest, done) => {
    endSpan(req.span, new Error());
    req.span = undefined;
    done();
  });
}
