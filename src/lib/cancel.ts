import { EventEmitter } from 'node:events';

/**
 * A cancellation that only says it happened: `aborted`, and one `abort` event. undici takes it as a request's
 * signal (it accepts an EventEmitter as well as an AbortSignal), and it costs less CPU per request than an
 * AbortController with its EventTarget (docs/gateway-speed.md).
 */
export class Cancel extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

/** What an upstream call is cancelled by: an AbortSignal, or a Cancel. */
export type CancelSignal = AbortSignal | Cancel;

/** Calls `onAbort` when `signal` fires (once); answers the function that stops listening. */
export function onCancel(signal: CancelSignal, onAbort: () => void): () => void {
  if (signal instanceof Cancel) {
    // `on`, not `once`: a Cancel fires at most once, and `once` wraps the listener in a bound function.
    signal.on('abort', onAbort);
    return () => signal.off('abort', onAbort);
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/**
 * An AbortSignal that follows `signal`, for code that combines signals (`AbortSignal.any`) or hands them on to
 * APIs that want one.
 */
export function abortSignalOf(signal: CancelSignal): AbortSignal {
  if (!(signal instanceof Cancel)) return signal;
  const controller = new AbortController();
  if (signal.aborted) controller.abort();
  else onCancel(signal, () => controller.abort());
  return controller.signal;
}
