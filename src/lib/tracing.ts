import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';

/**
 * OpenTelemetry tracing, off unless an OTLP endpoint is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; see docs/tracing.md). Off, the SDK is never loaded and every helper here
 * returns at its first test of `tracer`: `@opentelemetry/api` alone is loaded, and nothing is built per request.
 *
 * Attributes never carry secrets or contents: no headers, no tokens, no prompts, answers or tool arguments.
 */

export interface TracingConfig {
  /** The OTLP/HTTP traces URL (`.../v1/traces`). */
  url: string;
  /** `OTEL_EXPORTER_OTLP_HEADERS`, parsed. */
  headers: Record<string, string>;
  serviceName: string;
  /** `OTEL_TRACES_SAMPLER` and its `_ARG`. */
  sampler: string;
  samplerArg: number | undefined;
  version: string;
}

let tracer: Tracer | undefined;

/** Whether spans are being recorded: the cheap test hot paths make before building any attribute. */
export function tracingOn(): boolean {
  return tracer !== undefined;
}

/**
 * Loads the SDK and starts exporting; answers the function that flushes and stops it (at app close). One
 * process traces to one endpoint: a second start while one runs replaces it.
 */
export async function startTracing(cfg: TracingConfig): Promise<() => Promise<void>> {
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, hooks] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/context-async-hooks'),
    ]);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': cfg.serviceName, 'service.version': cfg.version }),
    sampler: await samplerOf(cfg),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: cfg.url, headers: cfg.headers }))],
  });
  // Spans find their parent through the async context; once per process (a second call keeps the first).
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  const own = provider.getTracer('switchboard', cfg.version);
  tracer = own;
  return async () => {
    if (tracer === own) tracer = undefined;
    await provider.shutdown(); // exports what is still buffered
  };
}

async function samplerOf(cfg: TracingConfig) {
  const s = await import('@opentelemetry/sdk-trace-base');
  const ratio = cfg.samplerArg ?? 1;
  switch (cfg.sampler) {
    case 'always_on':
      return new s.AlwaysOnSampler();
    case 'always_off':
      return new s.AlwaysOffSampler();
    case 'traceidratio':
      return new s.TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new s.ParentBasedSampler({ root: new s.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new s.ParentBasedSampler({ root: new s.TraceIdRatioBasedSampler(ratio) });
    default:
      return new s.ParentBasedSampler({ root: new s.AlwaysOnSampler() });
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The caller's W3C `traceparent`, as the parent context of a request's span (undefined: a new trace). */
function callerContext(traceparent: string | string[] | undefined): Context {
  const root = context.active();
  const m = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent.trim()) : null;
  if (!m?.[1] || !m[2] || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return root;
  return trace.setSpanContext(root, {
    traceId: m[1],
    spanId: m[2],
    traceFlags: Number.parseInt(m[3] ?? '00', 16) & 1,
    isRemote: true,
  });
}

/** A request's server span, child of the caller's `traceparent`; undefined when tracing is off. */
export function startServerSpan(name: string, traceparent: string | string[] | undefined, attributes: Attributes) {
  if (!tracer) return undefined;
  return tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, callerContext(traceparent));
}

/** Runs `fn` with `span` as the active span (its children's parent); `fn` alone when there is none. */
export function within<T>(span: Span | undefined, fn: () => T): T {
  if (!span) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** A span, child of the active one; undefined when tracing is off. */
export function startSpan(name: string, attributes: Attributes, kind: SpanKind = SpanKind.INTERNAL) {
  return tracer?.startSpan(name, { kind, attributes });
}

/** Ends a span, marking it failed with the error's class (not its message, which may quote user data). */
export function endSpan(span: Span | undefined, err?: unknown): void {
  if (!span) return;
  if (err !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.setAttribute('error.type', err instanceof Error ? err.constructor.name : typeof err);
  }
  span.end();
}

/** Runs `fn` in a new child span, ended when it settles (failed if it throws); `fn` alone when tracing is off. */
export async function inSpan<T>(
  name: string,
  attributes: Attributes | (() => Attributes),
  fn: (span: Span | undefined) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!tracer) return fn(undefined);
  const span = tracer.startSpan(name, {
    kind,
    attributes: typeof attributes === 'function' ? attributes() : attributes,
  });
  try {
    const value = await within(span, () => fn(span));
    endSpan(span);
    return value;
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}

/** The W3C `traceparent` of the active span, for a call upstream; undefined when tracing is off or none is active. */
export function traceparent(): string | undefined {
  if (!tracer) return undefined;
  const sc = trace.getSpan(context.active())?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`;
}

/** `headers` plus the active span's `traceparent` while tracing is on; `headers` itself otherwise. */
export function withTraceparent(headers: Record<string, string>): Record<string, string> {
  const parent = traceparent();
  return parent ? { ...headers, traceparent: parent } : headers;
}

export { SpanKind };
