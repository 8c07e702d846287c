import { SafeFetchError, type SafeFetchOptions, safeFetch } from '../lib/safe-fetch.ts';
import { SANDBOX_FETCH_MAX_BYTES } from './types.ts';

/** What a sandbox asks the host to fetch (already parsed from its message; every field untrusted). */
export interface FetchAsk {
  url: unknown;
  init: unknown;
}

export type FetchAnswer =
  | { ok: true; response: { status: number; url: string; headers: Record<string, string>; body: string } }
  | { ok: false; message: string };

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

/**
 * Performs a sandboxed code's `fetch` through the SSRF guard (http(s) only, every resolved address and every
 * redirect checked, body and time capped). Never throws: a refusal is an answer the code sees as a FetchError.
 */
export async function bridgeFetch(
  ask: FetchAsk,
  opts: { allowHosts: readonly string[]; signal: AbortSignal; timeoutMs: number },
): Promise<FetchAnswer> {
  if (typeof ask.url !== 'string' || ask.url.length > 8192) return { ok: false, message: 'fetch needs a URL string' };
  const init = (ask.init && typeof ask.init === 'object' ? ask.init : {}) as Record<string, unknown>;
  const method = typeof init.method === 'string' ? init.method.toUpperCase() : 'GET';
  if (!METHODS.has(method)) return { ok: false, message: `Method ${method} is not supported` };
  const headers: Record<string, string> = {};
  if (init.headers && typeof init.headers === 'object') {
    for (const [k, v] of Object.entries(init.headers as Record<string, unknown>)) {
      if (typeof v === 'string' || typeof v === 'number') headers[k] = String(v);
    }
  }
  const body = typeof init.body === 'string' ? init.body : undefined;
  if (body !== undefined && body.length > SANDBOX_FETCH_MAX_BYTES) {
    return { ok: false, message: `The request body is larger than ${SANDBOX_FETCH_MAX_BYTES} bytes` };
  }
  try {
    const res = await safeFetch(ask.url, {
      method: method as NonNullable<SafeFetchOptions['method']>,
      headers,
      ...(body !== undefined ? { body } : {}),
      maxBytes: SANDBOX_FETCH_MAX_BYTES,
      // The run's time left is a fraction of a millisecond (performance.now()); timers take whole ones.
      timeoutMs: Math.max(1, Math.min(15_000, Math.floor(opts.timeoutMs))),
      allowHosts: opts.allowHosts,
      signal: opts.signal,
    });
    return {
      ok: true,
      response: { status: res.status, url: res.url, headers: res.headers, body: res.body.toString('utf8') },
    };
  } catch (err) {
    if (err instanceof SafeFetchError) return { ok: false, message: err.message };
    return { ok: false, message: `The fetch failed: ${(err as Error).message}` };
  }
}
