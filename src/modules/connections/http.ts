import { setTimeout as sleep } from 'node:timers/promises';
import { retryAfterSeconds } from '../../lib/dates.ts';
import { BadGatewayError, GatewayTimeoutError, TooManyRequestsError } from '../../lib/errors.ts';
import { nestedDeeperThan } from '../../lib/json.ts';
import { redactSecrets } from '../../lib/redact.ts';
import { withTraceparent } from '../../lib/tracing.ts';
import type { BuiltRequest, ProviderDefinition } from '../providers/index.ts';
import { getPath, rateLimitDelaySeconds } from '../providers/index.ts';
import type { ConnectionSettings } from './settings.ts';

/**
 * The one HTTP client every call to a provider goes through (tools, token endpoint, user info, revocation):
 * a time limit on the whole exchange, a cap on the answer's size, redirects followed only with the token
 * kept on its own origin, and one retry after the wait a 429 or 503 asks for.
 */

export interface ProviderAnswer {
  status: number;
  /** Names lower-case. */
  headers: Record<string, string>;
  /** Parsed JSON when the answer is JSON, else the text. */
  body: unknown;
}

export interface SendOptions {
  timeoutMs: number;
  maxBytes: number;
  signal?: AbortSignal | undefined;
  /** Provider label, for messages. */
  label: string;
}

const MAX_REDIRECTS = 3;

/** The provider did not answer in time (or the caller gave up). */
export class ProviderTimeoutError extends GatewayTimeoutError {
  constructor(message: string) {
    super(message);
    this.name = 'GatewayTimeoutError'; // the wire name (SPEC §7 body `error`)
  }
}

function headersOf(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

async function readCapped(res: Response, maxBytes: number, label: string): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new BadGatewayError(`${label} answered more than ${maxBytes} bytes; narrow the request`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(text: string, contentType: string): unknown {
  if (text === '') return null;
  if (/json/i.test(contentType) || /^\s*[[{]/.test(text)) {
    try {
      const value: unknown = JSON.parse(text);
      // A provider's JSON nested past the limit is kept as text: shaping it (recursive walks) would overflow.
      return nestedDeeperThan(value) ? text : value;
    } catch {
      return text;
    }
  }
  return text;
}

/** One exchange (following up to three redirects); no retry. Throws 504 on timeout, 502 when unreachable. */
export async function sendOnce(req: BuiltRequest, opts: SendOptions): Promise<ProviderAnswer> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  let current = req;
  try {
    for (let hop = 0; ; hop++) {
      const res = await fetch(current.url, {
        method: current.method,
        headers: withTraceparent(current.headers),
        body: current.body,
        redirect: 'manual',
        signal,
      });
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location && hop < MAX_REDIRECTS) {
        await res.body?.cancel().catch(() => {});
        current = redirected(current, res.status, new URL(location, current.url));
        continue;
      }
      const text = await readCapped(res, opts.maxBytes, opts.label);
      return {
        status: res.status,
        headers: headersOf(res),
        body: parseBody(text, res.headers.get('content-type') ?? ''),
      };
    }
  } catch (err) {
    if (err instanceof BadGatewayError) throw err;
    if (timeout.aborted) throw new ProviderTimeoutError(`${opts.label} did not answer within ${opts.timeoutMs} ms`);
    if (opts.signal?.aborted) throw new ProviderTimeoutError(`The call to ${opts.label} was cancelled`);
    throw new BadGatewayError(`${opts.label} could not be reached`);
  }
}

/** The request after a redirect: the token never follows to another origin; 303 (and 301/302 of a POST) become GET. */
function redirected(req: BuiltRequest, status: number, to: URL): BuiltRequest {
  const sameOrigin = new URL(req.url).origin === to.origin;
  const headers = { ...req.headers };
  if (!sameOrigin) {
    delete headers.authorization;
    for (const name of req.credentialHeaders ?? []) delete headers[name];
  }
  const toGet = status === 303 || ((status === 301 || status === 302) && req.method === 'POST');
  if (toGet) {
    delete headers['content-type'];
    return { method: 'GET', url: to.toString(), headers };
  }
  return { ...req, url: to.toString(), headers };
}

/**
 * Sends a provider API request. A rate-limit answer (the provider's own signals: 429, GitHub's 403 with no
 * requests left ...) or a 503 is retried once after the wait it asks for, when that wait is at most
 * `maxRetryWaitMs`; otherwise, or when the retry is refused again, a 429 TooManyRequestsError carries the
 * provider's wait as `Retry-After`. Other answers are returned as they are, for the caller to judge.
 */
export async function sendWithRetry(
  provider: Pick<ProviderDefinition, 'api' | 'label'>,
  req: BuiltRequest,
  settings: Pick<ConnectionSettings, 'requestTimeoutMs' | 'maxResponseBytes' | 'maxRetryWaitMs'>,
  signal?: AbortSignal,
): Promise<ProviderAnswer> {
  const opts = {
    timeoutMs: settings.requestTimeoutMs,
    maxBytes: settings.maxResponseBytes,
    signal,
    label: provider.label,
  };
  for (let attempt = 0; ; attempt++) {
    const answer = await sendOnce(req, opts);
    let wait = rateLimitDelaySeconds(provider, answer.status, answer.headers, answer.body);
    // A 503 that does not say how long to wait: 1 s.
    if (wait === undefined && answer.status === 503) wait = retryAfterSeconds(answer.headers['retry-after']) ?? 1;
    if (wait === undefined) return answer;
    if (attempt === 0 && wait * 1000 <= settings.maxRetryWaitMs) {
      try {
        await sleep(wait * 1000, undefined, { signal });
      } catch {
        throw new ProviderTimeoutError(`The call to ${provider.label} was cancelled`);
      }
      continue;
    }
    if (answer.status === 503) return answer;
    throw new TooManyRequestsError(
      wait,
      `${provider.label} rate limit reached; retry after ${Math.max(1, Math.ceil(wait))} s`,
    );
  }
}

/** A short, redacted message from a provider's error answer. */
export function providerMessage(provider: Pick<ProviderDefinition, 'api'>, body: unknown): string {
  const candidates = [
    provider.api.errors.messagePath ? getPath(body, provider.api.errors.messagePath) : undefined,
    getPath(body, 'error_description'),
    getPath(body, 'message'),
    getPath(body, 'error.message'),
    getPath(body, 'errors[0].message'),
    getPath(body, 'error'),
    typeof body === 'string' ? body : undefined,
  ];
  const found = candidates.find((c) => typeof c === 'string' && c.trim() !== '') as string | undefined;
  const text = (found ?? 'no details').replace(/\s+/g, ' ').trim();
  return redactSecrets(text.length > 300 ? `${text.slice(0, 300)}…` : text);
}
