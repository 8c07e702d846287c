import { retryAfterSeconds } from '../../lib/dates.ts';
import { BadRequestError, ValidationError } from '../../lib/errors.ts';
import { checkToolArguments, withDefaults } from './arguments.ts';
import type { ProviderDefinition, ToolDefinition } from './definition.ts';
import { URL_PLACEHOLDER, VALUE_PLACEHOLDER } from './definition.ts';
import { getPath, setPath } from './json-path.ts';

/**
 * From a tool definition and arguments to the HTTP request to make, and from one answer to the next page's
 * request. Pure: no I/O, no token (the caller adds `Authorization`), so the connections service runs it and
 * tests check it without a network.
 */

export interface BuiltRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  /** Serialized body (JSON or form), with its Content-Type among the headers. */
  body?: string | undefined;
  /** Headers (lower-case) carrying the credential besides `authorization`: dropped on a redirect to another origin. */
  credentialHeaders?: readonly string[] | undefined;
}

export interface BuildOptions {
  /** Connection variables for `{var}` in base URLs: finalize fields, token-answer values, discovered ones. */
  baseUrlVars?: Readonly<Record<string, string>>;
}

/** 422 naming each argument at fault. */
export class ToolArgumentError extends ValidationError {}

const OMIT = Symbol('omit');
type Filled = unknown | typeof OMIT;

/** Values bound while filling a template: the arguments, plus `item` inside a `$each`. */
type Scope = Readonly<Record<string, unknown>>;

function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function stringify(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

const EXACT_VALUE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

function fillString(template: string, scope: Scope): Filled {
  const exact = EXACT_VALUE.exec(template);
  if (exact) {
    const v = scope[exact[1] as string];
    return present(v) ? v : OMIT;
  }
  let missing = false;
  const out = template.replace(VALUE_PLACEHOLDER, (_m, name: string) => {
    const v = scope[name];
    if (!present(v)) {
      missing = true;
      return '';
    }
    return stringify(v);
  });
  return missing ? OMIT : out;
}

/**
 * Fills a body (or query/header) template. A placeholder whose argument is absent removes its key (or
 * array element); an object or array left empty that way disappears too. Special objects:
 * - `{"$if": "name" | ["a", "b"], ...rest}`: `rest` only when every named argument is present;
 * - `{"$each": "name", "template": T}`: the array argument mapped through T, `{{item}}` being the element;
 * - `{"$rfc822": {from, to, cc, bcc, subject, body, inReplyTo, references}}`: a plain-text e-mail,
 *   base64url-encoded (Gmail's `raw`).
 */
export function fillTemplate(template: unknown, scope: Scope): Filled {
  if (typeof template === 'string') return fillString(template, scope);
  if (Array.isArray(template)) {
    const out = template.map((t) => fillTemplate(t, scope)).filter((v) => v !== OMIT);
    return template.length > 0 && out.length === 0 ? OMIT : out;
  }
  if (template === null || typeof template !== 'object') return template;
  const obj = template as Record<string, unknown>;
  if ('$each' in obj) {
    const list = scope[String(obj.$each)];
    if (!Array.isArray(list)) return OMIT;
    return list.map((item) => fillTemplate(obj.template, { ...scope, item })).filter((v) => v !== OMIT);
  }
  if ('$rfc822' in obj) {
    const parts = fillTemplate(obj.$rfc822, scope);
    if (parts === OMIT || parts === null || typeof parts !== 'object') return OMIT;
    return rfc822Base64Url(parts as Record<string, unknown>);
  }
  let rest = obj;
  if ('$if' in obj) {
    const names = Array.isArray(obj.$if) ? obj.$if : [obj.$if];
    if (!names.every((n) => present(scope[String(n)]))) return OMIT;
    const { $if: _ignored, ...others } = obj;
    rest = others;
  }
  const out: Record<string, unknown> = {};
  const keys = Object.keys(rest);
  for (const key of keys) {
    const v = fillTemplate(rest[key], scope);
    if (v !== OMIT) out[key] = v;
  }
  return keys.length > 0 && Object.keys(out).length === 0 ? OMIT : out;
}

/** One header line: no CR/LF (header injection), non-ASCII as RFC 2047 encoded words. */
function headerValue(v: unknown): string {
  const s = (Array.isArray(v) ? v.map(stringify).join(', ') : stringify(v)).replace(/[\r\n]+/g, ' ').trim();
  return /^[\x20-\x7e]*$/.test(s) ? s : `=?UTF-8?B?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

function rfc822Base64Url(parts: Record<string, unknown>): string {
  const lines: string[] = [];
  const header = (name: string, key: string) => {
    if (present(parts[key])) lines.push(`${name}: ${headerValue(parts[key])}`);
  };
  header('From', 'from');
  header('To', 'to');
  header('Cc', 'cc');
  header('Bcc', 'bcc');
  header('Subject', 'subject');
  header('In-Reply-To', 'inReplyTo');
  header('References', 'references');
  lines.push('MIME-Version: 1.0', 'Content-Type: text/plain; charset="UTF-8"', 'Content-Transfer-Encoding: base64');
  const body = Buffer.from(present(parts.body) ? stringify(parts.body) : '', 'utf8')
    .toString('base64')
    .replace(/.{1,76}/g, '$&\r\n');
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'utf8').toString('base64url');
}

const SAFE_VAR = /^[A-Za-z0-9._~-]+$/;

/** Fills `{var}` in a base URL. A leading variable must be a whole origin (Salesforce's instance URL). */
/** `{name}` connection variables in a provider header (Xero's `xero-tenant-id: {tenantId}`); one line each. */
function fillHeaderVars(template: string, vars: Readonly<Record<string, string>>): string {
  return template.replace(URL_PLACEHOLDER, (_m, _plus: string, name: string) => {
    const v = vars[name];
    if (v === undefined || v === '') {
      throw new BadRequestError(`The connection has no "${name}" value; finalize or reconnect it`);
    }
    if (!/^[\x20-\x7e]+$/.test(v)) {
      throw new BadRequestError(`The connection value "${name}" holds characters a header cannot`);
    }
    return v;
  });
}

/** A base URL with its variables filled, without a trailing slash (tool paths start with one). */
export function fillBaseUrl(template: string, vars: Readonly<Record<string, string>>): string {
  return fillUrl(template, vars).replace(/\/+$/, '');
}

/** An endpoint URL (token, user info, discovery) with its variables filled, as written (Sentry's `/token/`). */
export function fillUrl(template: string, vars: Readonly<Record<string, string>>): string {
  const filled = template.replace(URL_PLACEHOLDER, (_m, _plus: string, name: string, offset: number) => {
    const v = vars[name];
    if (v === undefined || v === '') {
      throw new BadRequestError(`The connection has no "${name}" value; finalize or reconnect it`);
    }
    if (offset === 0) {
      let u: URL;
      try {
        u = new URL(v);
      } catch {
        throw new BadRequestError(`The connection value "${name}" is not a URL`);
      }
      if (!/^https?:$/.test(u.protocol) || u.username || u.password || u.search || u.hash) {
        throw new BadRequestError(`The connection value "${name}" is not a plain http(s) origin`);
      }
      return v.replace(/\/+$/, '');
    }
    if (!SAFE_VAR.test(v) || v === '.' || v === '..') {
      throw new BadRequestError(`The connection value "${name}" holds characters a URL part cannot`);
    }
    return v;
  });
  return filled;
}

// URL parsing resolves `.` and `..` segments (even encoded as %2E) and would reach another endpoint. An
// argument's own `%` is encoded, so only a bare dot segment is dangerous.
const DOT_SEGMENT = /^\.{1,2}$/;

function fillPath(path: string, args: Scope): string {
  const problems: { field: string; message: string }[] = [];
  const out = path.replace(URL_PLACEHOLDER, (_m, plus: string, name: string) => {
    const v = args[name];
    if (!present(v) || v === '') {
      problems.push({ field: `arguments.${name}`, message: 'is required' });
      return '';
    }
    const segments = plus ? stringify(v).split('/') : [stringify(v)];
    if (segments.some((seg) => DOT_SEGMENT.test(seg))) {
      problems.push({ field: `arguments.${name}`, message: 'must not be a "." or ".." path segment' });
      return '';
    }
    return segments.map(encodeURIComponent).join('/');
  });
  if (problems.length) throw new ToolArgumentError(describe(problems), problems);
  return out;
}

function describe(problems: { field: string; message: string }[]): string {
  return `Invalid arguments: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}`;
}

function appendQuery(url: URL, name: string, value: unknown, arrays: 'repeat' | 'comma'): void {
  if (!present(value) || value === '') return;
  if (Array.isArray(value)) {
    const items = value.filter(present).map(stringify);
    if (items.length === 0) return;
    if (arrays === 'comma') url.searchParams.append(name, items.join(','));
    else for (const item of items) url.searchParams.append(name, item);
    return;
  }
  url.searchParams.append(name, stringify(value));
}

function formBody(value: unknown): string {
  const form = new URLSearchParams();
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (!present(v)) continue;
      if (Array.isArray(v)) for (const item of v) form.append(k, stringify(item));
      else form.append(k, stringify(v));
    }
  }
  return form.toString();
}

/**
 * The request a tool call makes: arguments checked against the tool's schema (422 naming each field) and
 * completed with its defaults, path parameters URL-encoded, query and body filled from the templates.
 */
export function buildToolRequest(
  provider: Pick<ProviderDefinition, 'api'>,
  tool: Pick<ToolDefinition, 'parameters' | 'request'>,
  args: unknown,
  opts: BuildOptions = {},
): BuiltRequest {
  const given = args === undefined ? {} : args;
  const problems = checkToolArguments(tool.parameters, given);
  if (problems.length) throw new ToolArgumentError(describe(problems), problems);
  const scope = withDefaults(tool.parameters, given as Record<string, unknown>);
  const req = tool.request;

  const base = fillBaseUrl(req.baseUrl ?? provider.api.baseUrl, opts.baseUrlVars ?? {});
  const url = new URL(base + fillPath(req.path, scope));
  // Defence in depth: whatever the arguments, the request stays under the API's base URL.
  const baseUrl = new URL(base);
  if (url.origin !== baseUrl.origin || !url.pathname.startsWith(baseUrl.pathname.replace(/\/?$/, '/'))) {
    throw new ToolArgumentError('Invalid arguments: the request would leave the API', []);
  }
  for (const [name, template] of Object.entries(req.query)) {
    const v = typeof template === 'string' ? fillString(template, scope) : template;
    if (v !== OMIT) appendQuery(url, name, v, req.queryArrayFormat);
  }

  const headers: Record<string, string> = { accept: 'application/json' };
  for (const [name, template] of Object.entries(provider.api.headers)) {
    headers[name.toLowerCase()] = fillHeaderVars(template, opts.baseUrlVars ?? {});
  }
  for (const [name, template] of Object.entries(req.headers)) {
    const v = fillString(template, scope);
    if (v !== OMIT) headers[name.toLowerCase()] = headerValue(v);
  }

  let body: string | undefined;
  if (req.body !== undefined) {
    const filled = fillTemplate(req.body, scope);
    const value = filled === OMIT ? {} : filled;
    if (req.bodyFormat === 'form') {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = formBody(value);
    } else if (req.bodyFormat === 'text') {
      // File content (Drive uploads): the filled text as it is, typed by the tool's Content-Type header.
      headers['content-type'] ??= 'text/plain; charset=utf-8';
      body = filled === OMIT ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    } else {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(value);
    }
  }
  return { method: req.method, url: url.toString(), headers, body };
}

// ---- pagination ----

export interface PageAnswer {
  /** The parsed JSON answer. */
  body: unknown;
  /** Answer headers, names lower-case. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

function header(headers: PageAnswer['headers'], name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The `rel="next"` target of an RFC 8288 Link header. */
export function nextLink(link: string | undefined): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]+)>(.*)$/.exec(part);
    if (m && /;\s*rel="?([^";]*\s)?next(\s[^";]*)?"?/i.test(m[2] as string)) return m[1];
  }
  return undefined;
}

/** A next-page URL from the answer, only on the same origin: the token must never travel elsewhere. */
function sameOrigin(previous: string, next: string): string | undefined {
  try {
    const prev = new URL(previous);
    const u = new URL(next, prev.origin);
    return u.origin === prev.origin ? u.toString() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The request for the page after `answer`, or undefined when there is none or `pagesFetched` reached the
 * tool's `maxPages`.
 */
export function nextPageRequest(
  tool: Pick<ToolDefinition, 'request' | 'response'>,
  previous: BuiltRequest,
  answer: PageAnswer,
  pagesFetched: number,
): BuiltRequest | undefined {
  const p = tool.request.pagination;
  if (p.style === 'none' || pagesFetched >= p.maxPages) return undefined;
  switch (p.style) {
    case 'cursor': {
      if (p.hasMorePath && getPath(answer.body, p.hasMorePath) === false) return undefined;
      const cursor = getPath(answer.body, p.cursorPath);
      if (!present(cursor) || cursor === '' || typeof cursor === 'object') return undefined;
      if (p.in === 'query') {
        const url = new URL(previous.url);
        url.searchParams.set(p.param, stringify(cursor));
        return { ...previous, url: url.toString() };
      }
      const body = previous.body ? (JSON.parse(previous.body) as Record<string, unknown>) : {};
      setPath(body, p.param, cursor);
      return { ...previous, body: JSON.stringify(body) };
    }
    case 'link': {
      const next = nextLink(header(answer.headers, 'link'));
      const url = next && sameOrigin(previous.url, next);
      return url ? { ...previous, url } : undefined;
    }
    case 'next_url': {
      const next = getPath(answer.body, p.nextUrlPath);
      const url = typeof next === 'string' && next ? sameOrigin(previous.url, next) : undefined;
      return url ? { ...previous, url } : undefined;
    }
    case 'page': {
      const listPath = tool.response.listPath;
      const list = listPath ? getPath(answer.body, listPath) : answer.body;
      if (!Array.isArray(list) || list.length === 0) return undefined;
      const url = new URL(previous.url);
      const current = Number(url.searchParams.get(p.param) ?? p.start);
      url.searchParams.set(p.param, String((Number.isFinite(current) ? current : p.start) + 1));
      return { ...previous, url: url.toString() };
    }
  }
}

// ---- provider signals ----

/**
 * Seconds to wait when an answer says the rate limit was hit, or undefined when it does not. A 429 in
 * `rateLimit.statuses` always counts; another listed status counts with a wait hint (`Retry-After`, a body
 * field) or a `remainingHeader` of 0: GitHub answers 403 both for rate limits and for missing permissions,
 * and only the headers tell them apart.
 */
export function rateLimitDelaySeconds(
  provider: Pick<ProviderDefinition, 'api'>,
  status: number,
  headers: PageAnswer['headers'],
  body: unknown,
  nowMs: number = Date.now(),
): number | undefined {
  const rl = provider.api.rateLimit;
  if (!rl.statuses.includes(status)) return undefined;
  const seconds = (v: number) => Math.max(0, Math.ceil(v));
  const retryAfter = retryAfterSeconds(header(headers, rl.retryAfterHeader), nowMs);
  if (retryAfter !== undefined) return seconds(retryAfter);
  if (rl.retryAfterBodyPath) {
    const v = getPath(body, rl.retryAfterBodyPath);
    if (typeof v === 'number' || (typeof v === 'string' && v.trim() !== '')) {
      const n = Number(v);
      if (Number.isFinite(n)) return seconds(n);
    }
  }
  // A 429 always means "slow down"; another listed status only with a remaining count of 0.
  if (status !== 429 && (!rl.remainingHeader || header(headers, rl.remainingHeader)?.trim() !== '0')) {
    return undefined;
  }
  const reset = rl.resetHeader ? Number(header(headers, rl.resetHeader) ?? Number.NaN) : Number.NaN;
  if (Number.isFinite(reset)) {
    if (rl.resetFormat === 'seconds') return seconds(reset);
    if (rl.resetFormat === 'epoch-ms') return seconds((reset - nowMs) / 1000);
    return seconds(reset - nowMs / 1000);
  }
  // Rate limited without a hint: a short pause; the caller's backoff grows it.
  return 1;
}

/** The provider's error message when a 2xx answer is a failure (Slack `ok: false`, GraphQL `errors`). */
export function providerErrorMessage(provider: Pick<ProviderDefinition, 'api'>, body: unknown): string | undefined {
  const { okPath, messagePath } = provider.api.errors;
  const failed = okPath ? getPath(body, okPath) === false : false;
  const message = messagePath ? getPath(body, messagePath) : undefined;
  if (failed) return present(message) ? stringify(message) : 'The provider reported a failure';
  if (!okPath && present(message)) return stringify(message);
  return undefined;
}
