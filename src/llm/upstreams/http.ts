import { Agent, errors, request } from 'undici';
import type { CancelSignal } from '../../lib/cancel.ts';
import { readSse, type SseEvent } from '../../lib/sse.ts';
import { UpstreamError } from '../types.ts';

/**
 * The one HTTP client for LLM upstreams: pooled keep-alive connections (the gateway's latency budget leaves
 * no room for a handshake per call), time limits, and faults classified for the gateway. Upstream URLs come
 * from operator settings, not users, so the SSRF guard does not apply here.
 */
const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 256 });

export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Uint8Array> & {
    json(): Promise<unknown>;
    text(): Promise<string>;
    dump(): Promise<void>;
    iterator(opts: { destroyOnReturn: boolean }): AsyncIterable<Uint8Array>;
  };
}

/**
 * The Server-Sent Events of an upstream answer. A reader that stops early (at the stream's last event, or
 * gone) leaves the body whole instead of destroying it, which made an AbortError and its stack trace for
 * every stream (about a tenth of a stream's CPU time in the gateway): what remains, usually only the end of
 * the answer, is read in the background (`dump`: at most 128 KB, then destroyed), which also gives the
 * connection back to the pool.
 */
export async function* upstreamEvents(res: UpstreamResponse): AsyncGenerator<SseEvent> {
  let ended = false;
  try {
    yield* readSse(res.body.iterator({ destroyOnReturn: false }));
    ended = true;
  } finally {
    if (!ended) void res.body.dump().catch(() => {});
  }
}

export async function postUpstream(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  signal: CancelSignal,
  timeoutMs: number,
): Promise<UpstreamResponse> {
  let res: UpstreamResponse;
  try {
    res = (await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal,
      dispatcher: agent,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    })) as unknown as UpstreamResponse;
  } catch (err) {
    throw classifyTransportError(err, signal);
  }
  if (res.statusCode >= 400) throw await errorFromResponse(res);
  return res;
}

export function classifyTransportError(err: unknown, signal: CancelSignal): unknown {
  if (signal.aborted) return err;
  if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
    return new UpstreamError('timeout', 'The model provider did not answer in time');
  }
  if (err instanceof UpstreamError) return err;
  return new UpstreamError('failed', 'Could not reach the model provider');
}

function retryAfterOf(headers: UpstreamResponse['headers']): number | undefined {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return Math.max(1, Math.ceil(secs));
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(1, Math.ceil((date - Date.now()) / 1000));
}

async function errorFromResponse(res: UpstreamResponse): Promise<UpstreamError> {
  let message = `The model provider answered ${res.statusCode}`;
  try {
    const body = (await res.body.json()) as { error?: { message?: string } | string; message?: string };
    const detail = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (detail) message = `${message}: ${String(detail).slice(0, 500)}`;
  } catch {
    await res.body.dump().catch(() => {});
  }
  if (res.statusCode === 429) return new UpstreamError('rate_limited', message, 429, retryAfterOf(res.headers) ?? 30);
  // The caller's request was refused for its content (bad parameters, context too long): theirs to fix.
  if ([400, 404, 413, 422].includes(res.statusCode)) return new UpstreamError('rejected', message, res.statusCode);
  if (res.statusCode === 408 || res.statusCode === 504) return new UpstreamError('timeout', message, res.statusCode);
  return new UpstreamError('failed', message, res.statusCode);
}
