import type { IncomingHttpHeaders } from 'node:http';
import { Agent, type Dispatcher, errors } from 'undici';
import { type CancelSignal, onCancel } from '../lib/cancel.ts';
import { retryAfterSeconds } from '../lib/dates.ts';
import { type SseEvent, SseParser } from '../lib/sse.ts';
import { traceparent } from '../lib/tracing.ts';
import { UpstreamError } from './types.ts';

/**
 * The one HTTP client for LLM upstreams: pooled keep-alive connections (the gateway's latency budget leaves
 * no room for a handshake per call), time limits, and faults classified for the gateway. Upstream URLs come
 * from operator settings, not users, so the SSRF guard does not apply here.
 *
 * Calls go through undici's dispatcher with a handler of our own, which takes the answer's bytes as they come:
 * a JSON answer is gathered and parsed, a stream parsed into events as it arrives. undici's `request` wraps
 * every answer in a Node stream read back through its async iterator, whose CPU and garbage-collection pauses
 * made most of the gateway's added p99 (docs/gateway-speed.md).
 */
const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 256 });

/** What an error answer's body is read for (its message): the rest is read and dropped. */
const ERROR_BODY_BYTES = 64 * 1024;
/**
 * A stream its reader left early is read to its end in the background, which gives the connection back to the
 * pool (usually only the end of the answer remains); past this much the connection is closed instead.
 */
const DRAIN_BYTES = 128 * 1024;
/** A stream whose reader falls this far behind stops reading from the upstream until it catches up. */
const STREAM_BUFFER_BYTES = 256 * 1024;
const STREAM_BROKE_OFF = 'The model provider stream broke off';
/**
 * The most of an answer held in memory: a JSON answer, or one event of a stream (its data lines and the line not
 * finished yet). Past it the call fails and its connection is closed; an upstream that never ends its answer or
 * its line would otherwise grow the service's memory until the time-out.
 */
const ANSWER_BYTES = 32 * 1024 * 1024;
const ANSWER_TOO_LARGE = `The model provider's answer is larger than ${ANSWER_BYTES / 1024 / 1024} MB`;
const EVENT_TOO_LARGE = `The model provider sent a stream event larger than ${ANSWER_BYTES / 1024 / 1024} MB`;

/** What takes the pieces of an answer's body. */
interface BodyReader {
  data(chunk: Buffer): void;
  /** The body ended, or broke off with `err`. */
  end(err?: Error): void;
}

/** Called once a successful answer's status and headers are in: answers the reader of its body. */
type ReadAnswer<T> = (
  controller: Dispatcher.DispatchController,
  resolve: (value: T) => void,
  reject: (err: unknown) => void,
) => BodyReader;

/**
 * POSTs a JSON body and settles with what `read` makes of a successful answer: once the status and headers are
 * in, `read` answers the reader of the body, which calls `resolve` or `reject`. An error status rejects with its
 * fault (errorFromAnswer), and an error before the answer (no connection, no answer in time, cancelled) as
 * classifyTransportError says.
 */
function call<T>(
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  signal: CancelSignal,
  timeoutMs: number,
  read: ReadAnswer<T>,
): Promise<T> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(classifyTransportError(new errors.RequestAbortedError(), signal));
    const handler = new CallHandler(signal, read, resolve, reject);
    const parent = traceparent(); // undefined unless tracing is on
    try {
      agent.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers, ...(parent ? { traceparent: parent } : {}) },
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        handler,
      );
    } catch (err) {
      handler.stop();
      handler.fail(err as Error);
    }
  });
}

/**
 * undici's handler of one call: a class rather than an object of closures, as its state lives for the whole
 * call (the upstream's latency): with hundreds of calls in flight, what each holds is what every young-generation
 * collection copies.
 */
class CallHandler<T> implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private reader: BodyReader | undefined;
  /** Stops listening for the caller's cancellation. */
  readonly stop: () => void;

  constructor(
    private readonly signal: CancelSignal,
    private readonly read: ReadAnswer<T>,
    private readonly resolve: (value: T) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.stop = onCancel(signal, () => this.controller?.abort(new errors.RequestAbortedError()));
  }

  fail(err: Error): void {
    this.reject(classifyTransportError(err, this.signal));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Cancelled while the request waited for its connection: undici tells us of it only now.
    if (this.signal.aborted) controller.abort(new errors.RequestAbortedError());
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    answerHeaders: IncomingHttpHeaders,
  ): void {
    if (statusCode < 400) {
      this.reader = this.read(controller, this.resolve, this.reject);
      return;
    }
    const bytes = new Bytes(ERROR_BODY_BYTES);
    this.reader = {
      data: (chunk) => bytes.data(chunk),
      end: (err) => (err ? this.fail(err) : this.reject(errorFromAnswer(statusCode, answerHeaders, bytes.text()))),
    };
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.reader?.data(chunk);
  }

  onResponseEnd(): void {
    this.stop();
    this.reader?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.stop();
    if (this.reader) this.reader.end(err);
    else this.fail(err);
  }
}

/** Up to `limit` bytes of a body (`size` of them kept), the rest read and dropped. */
class Bytes {
  private readonly parts: Buffer[] = [];
  size = 0;

  constructor(private readonly limit = Number.POSITIVE_INFINITY) {}

  data(chunk: Buffer): void {
    if (this.size >= this.limit) return;
    this.parts.push(chunk);
    this.size += chunk.length;
  }

  text(): string {
    return (this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts)).toString('utf8');
  }
}

/**
 * A non-streamed call: the answer's JSON. An error status is an UpstreamError (errorFromAnswer); an answer that
 * is not JSON, `failed` with "The model provider sent an unreadable answer".
 */
export function postJson(
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  signal: CancelSignal,
  timeoutMs: number,
): Promise<unknown> {
  return call(url, headers, body, signal, timeoutMs, (controller, resolve, reject) => {
    const bytes = new Bytes();
    return {
      data(chunk) {
        bytes.data(chunk);
        if (bytes.size > ANSWER_BYTES) controller.abort(new UpstreamError('failed', ANSWER_TOO_LARGE));
      },
      end(err) {
        if (err) return reject(classifyTransportError(err, signal));
        try {
          resolve(JSON.parse(bytes.text()));
        } catch {
          reject(new UpstreamError('failed', 'The model provider sent an unreadable answer'));
        }
      },
    };
  });
}

/** What a stream's `map` answers to end it before its body does (OpenAI's `data: [DONE]`). */
export const END_OF_STREAM: unique symbol = Symbol('end of stream');

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * A streamed call, made when its reader first asks: its Server-Sent Events as they arrive, each made an item by
 * `map` (an event `map` cannot read, a SyntaxError, is a stream that broke off; one larger than ANSWER_BYTES
 * fails the stream). The first `next` rejects with the call's fault when there is no answer (an error status,
 * as postJson). A reader that stops early (at
 * END_OF_STREAM, or gone) leaves the rest to be read in the background (up to DRAIN_BYTES, then the connection
 * is closed), which gives the connection back to the pool; destroying it made an AbortError and its stack trace
 * for every stream. A reader that falls behind pauses the upstream.
 */
export function postEvents<T>(
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  signal: CancelSignal,
  timeoutMs: number,
  map: (ev: SseEvent) => T | typeof END_OF_STREAM,
): AsyncIterableIterator<T> {
  return new EventStream(signal, map, (stream) =>
    call<void>(url, headers, body, signal, timeoutMs, (controller, resolve) => {
      stream.attach(controller);
      resolve();
      return stream;
    }),
  );
}

/**
 * The events of a stream between undici, which pushes its pieces, and the reader, who pulls items: an async
 * iterator written out rather than async generators stacked, which cost a few promises and objects per event
 * at each level. Exported for its unit test; callers use postEvents.
 */
export class EventStream<T> implements BodyReader, AsyncIterableIterator<T> {
  /** The answer's flow (pause, resume, abort), once its status and headers are in. */
  private controller: Dispatcher.DispatchController | undefined;
  private readonly parser = new SseParser();
  private queue: SseEvent[] = [];
  private head = 0;
  private buffered = 0;
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private started: Promise<void> | undefined;
  /** The reader is done: it reached the end or a fault, or left. */
  private finished = false;
  /** Set once the reader has left before the end: the rest is counted and dropped. */
  private drained: number | undefined;

  constructor(
    private readonly signal: CancelSignal,
    private readonly map: (ev: SseEvent) => T | typeof END_OF_STREAM,
    private readonly begin: (stream: EventStream<T>) => Promise<void>,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  attach(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  data(chunk: Buffer): void {
    if (this.drained !== undefined) {
      this.drained += chunk.length;
      if (this.drained > DRAIN_BYTES) this.controller?.abort(new errors.RequestAbortedError());
      return;
    }
    const events = this.parser.push(chunk);
    // What the queue holds is its events' data: a chunk's length would count an event that arrived in many
    // pieces by its last one alone, and let the queue grow far past the bound before pausing.
    for (const ev of events) {
      this.queue.push(ev);
      this.buffered += ev.data.length;
    }
    // The events this piece completed are the reader's before the fault of the one too large.
    if (this.parser.pending > ANSWER_BYTES) this.controller?.abort(new UpstreamError('failed', EVENT_TOO_LARGE));
    else if (this.buffered > STREAM_BUFFER_BYTES) this.controller?.pause();
    if (events.length) this.notify();
  }

  end(err?: Error): void {
    if (err) this.failure = err;
    else for (const ev of this.parser.end()) this.queue.push(ev);
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.finished) return Promise.resolve(DONE);
    if (!this.started) {
      this.started = this.begin(this);
      return this.started.then(
        () => this.next(),
        (err: unknown) => {
          this.finished = true;
          throw err;
        },
      );
    }
    if (this.head < this.queue.length) {
      const ev = this.queue[this.head++] as SseEvent;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
        this.buffered = 0;
        if (this.controller?.paused) this.controller.resume();
      }
      let item: T | typeof END_OF_STREAM;
      try {
        item = this.map(ev);
      } catch (err) {
        this.leave();
        return Promise.reject(faultOf(err, this.signal));
      }
      if (item === END_OF_STREAM) {
        this.leave();
        return Promise.resolve(DONE);
      }
      return Promise.resolve({ done: false, value: item });
    }
    if (this.failure) {
      this.finished = true;
      // The answer had begun: its connection failing is a stream that broke off, not one never reached.
      return Promise.reject(classifyTransportError(this.failure, this.signal, STREAM_BROKE_OFF));
    }
    if (this.ended) {
      this.finished = true;
      return Promise.resolve(DONE);
    }
    return new Promise<void>((resolve) => {
      this.wake = resolve;
    }).then(() => this.next());
  }

  /** The reader leaves (a `break` or `return` in its loop, or a fault): the rest is drained. */
  async return(): Promise<IteratorResult<T>> {
    if (this.started && !this.finished) {
      await this.started.catch(() => {});
      this.leave();
    }
    this.finished = true;
    return DONE;
  }

  private leave(): void {
    this.finished = true;
    if (this.ended) return;
    this.drained = 0;
    this.queue = [];
    if (this.controller?.paused) this.controller.resume();
  }
}

function classifyTransportError(
  err: unknown,
  signal: CancelSignal,
  message = 'Could not reach the model provider',
): unknown {
  if (signal.aborted) return err;
  if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
    return new UpstreamError('timeout', 'The model provider did not answer in time');
  }
  if (err instanceof UpstreamError) return err;
  return new UpstreamError('failed', message);
}

/**
 * What a stream reader's error becomes: an event that is not JSON is a stream that broke off (unless the caller
 * cancelled), anything else as classifyTransportError says.
 */
export function faultOf(err: unknown, signal: CancelSignal): unknown {
  if (err instanceof SyntaxError && !signal.aborted) return new UpstreamError('failed', STREAM_BROKE_OFF);
  return classifyTransportError(err, signal);
}

function errorFromAnswer(statusCode: number, headers: IncomingHttpHeaders, text: string): UpstreamError {
  let message = `The model provider answered ${statusCode}`;
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    const detail = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (detail) message = `${message}: ${String(detail).slice(0, 500)}`;
  } catch {
    // not JSON: the status says enough
  }
  if (statusCode === 429) {
    const wait = retryAfterSeconds(headers['retry-after']);
    return new UpstreamError('rate_limited', message, 429, wait === undefined ? 30 : Math.max(1, Math.ceil(wait)));
  }
  // The caller's request was refused for its content (bad parameters, context too long): theirs to fix.
  if ([400, 404, 413, 422].includes(statusCode)) return new UpstreamError('rejected', message, statusCode);
  if (statusCode === 408 || statusCode === 504) return new UpstreamError('timeout', message, statusCode);
  return new UpstreamError('failed', message, statusCode);
}
