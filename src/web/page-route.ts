import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { serviceContextOf } from '../access/guard.ts';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { ServiceContext } from '../context.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { formIssues, type PageHelpers, pageHelpers, type SignedIn } from './common.ts';

/**
 * One wrapper for every page route: CSRF on forms, the browser's session, params/query/form read through zod
 * schemas, and refusals answered on the page. Route handlers get typed values and never cast the request.
 */

/** A form or query field as browsers send it: the first value of a repeated field, '' when absent. */
export const text = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((v) => (Array.isArray(v) ? v[0] : v) ?? '');

/** A repeated field (checkboxes, multi-selects): every value, [] when absent. */
export const list = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]));

/** A form of text fields; fields not named (a provider's `field.*`, `secret_*`) are kept, as text. */
export function formOf<S extends z.ZodRawShape>(shape: S) {
  return z.object(shape).catchall(text);
}

/**
 * A path parameter holding an id of the form `pattern`; anything else is the not-found `message` (told the
 * value as given), without a lookup.
 */
export function idParam(pattern: RegExp, message: (given: string) => string) {
  return z.string().refine((v) => pattern.test(v), { error: (issue) => message(String(issue.input)) });
}

/** A form that is not what the page sends (a field that is not text, a body that is not a form): 400. */
export class FormError extends AppError {
  constructor(message: string) {
    super(400, message);
  }
}

/** What every page handler has: the request, the reply, and the CSRF token for the page's forms. */
export interface PublicBase {
  req: FastifyRequest;
  reply: FastifyReply;
  /** The CSRF token for the forms of the page answered (sets its cookie on first use). */
  csrf(): string;
}

/** A signed-in page's base: the user and the service context besides. */
export interface PageBase extends PublicBase {
  current: SignedIn;
  ctx: ServiceContext;
}

/** The parts a handler gets beside its base: the parsed params, query and form. */
type Parts<P, Q, F> = { params: P; query: Q; form: F };

export type Page<P, Q, F> = PageBase & Parts<P, Q, F>;

/** The public pages' counterpart (sign-in, the OAuth interaction): no session is required. */
export type PublicPage<P, Q, F> = PublicBase & Parts<P, Q, F>;

/**
 * A route's answer to a refusal (an id that does not fit, a form that does not parse, an AppError the handler
 * threw): the page with the message and status, or undefined to let the error through (the JSON error body).
 */
export type Refuser<B> = (page: B, err: AppError) => unknown;

type Schema<T> = z.ZodType<T, unknown>;

interface Spec<P, Q, F, B> {
  params?: Schema<P>;
  query?: Schema<Q>;
  form?: Schema<F>;
  refused?: Refuser<B>;
  /** The answer to a form whose CSRF token does not fit (default: the 403 page). */
  csrfFailed?: (reply: FastifyReply) => unknown;
  /** Reads the form (default: the parsed body); when it throws, there is no token to check: see `unreadable`. */
  readBody?: (req: FastifyRequest) => Promise<unknown>;
  rateLimit?: Record<string, unknown>;
  bodyLimit?: number;
}

export interface SignedInSpec<P, Q, F> extends Spec<P, Q, F, PageBase> {
  /**
   * Where sign-in comes back to: default this page with its query, or a form's own path. `param` reads a path
   * parameter as given (not yet checked).
   */
  returnTo?: string | ((param: (name: string) => string) => string);
  /** The answer to a signed-out browser (default: the redirect to sign-in). */
  signedOut?: (req: FastifyRequest, reply: FastifyReply) => unknown;
  /** The answer when `readBody` failed (the form's fault, as a refusal with its status), once signed in. */
  unreadable?: (page: Page<P, Q, undefined>, err: unknown) => unknown;
}

export type PublicSpec<P, Q, F> = Spec<P, Q, F, PublicBase>;

const PAGE_OPTIONS = { schema: { hide: true }, config: { auth: 'public' as const } };
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function optionsOf(spec: Spec<unknown, unknown, unknown, never>) {
  return {
    ...PAGE_OPTIONS,
    ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
    config: { ...PAGE_OPTIONS.config, ...(spec.rateLimit ? { rateLimit: spec.rateLimit } : {}) },
  };
}

/** Path parameters as fastify gives them, by name (not yet checked). */
const RawParams = z.record(z.string(), z.string()).catch({});
/** The form's CSRF token ('' when it has none, or the body is no form). */
const CsrfField = z.object({ csrf: text }).catch({ csrf: '' });

function parse<T>(schema: Schema<T> | undefined, value: unknown, fault: (error: z.ZodError) => AppError): T {
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw fault(parsed.error);
  return parsed.data;
}

/** A path parameter that does not fit: not found, in the schema's words (see idParam). */
const paramFault = (error: z.ZodError) => new NotFoundError(error.issues[0]?.message ?? 'Not found');
const formFault = (error: z.ZodError) => new FormError(`The form could not be read: ${formIssues(error)}.`);
const queryFault = (error: z.ZodError) => new FormError(`The address could not be read: ${formIssues(error)}.`);

/** The form of an unsafe request (CSRF checked), or `{ unreadable }` when `readBody` could not read it. */
async function bodyOf(
  req: FastifyRequest,
  reply: FastifyReply,
  helpers: PageHelpers,
  spec: Spec<unknown, unknown, unknown, never>,
): Promise<{ body: unknown } | { unreadable: unknown } | { answered: unknown }> {
  if (!UNSAFE.has(req.method)) return { body: {} };
  let body: unknown;
  try {
    body = spec.readBody ? await spec.readBody(req) : (req.body ?? {});
  } catch (err) {
    return { unreadable: err };
  }
  if (!helpers.csrfOk(req, CsrfField.parse(body))) {
    return { answered: spec.csrfFailed ? await spec.csrfFailed(reply) : helpers.csrfFailed(reply) };
  }
  return { body };
}

async function refuse<B>(refused: Refuser<B> | undefined, base: B, err: unknown): Promise<unknown> {
  if (!refused || !(err instanceof AppError)) throw err;
  const answer = await refused(base, err);
  if (answer === undefined) throw err;
  return answer;
}

export interface PageRouter {
  helpers: PageHelpers;
  get<P = undefined, Q = undefined>(
    path: string,
    spec: SignedInSpec<P, Q, undefined>,
    handler: (page: Page<P, Q, undefined>) => unknown,
  ): void;
  post<P = undefined, F = undefined>(
    path: string,
    spec: SignedInSpec<P, undefined, F>,
    handler: (page: Page<P, undefined, F>) => unknown,
  ): void;
  publicGet<P = undefined, Q = undefined>(
    path: string,
    spec: PublicSpec<P, Q, undefined>,
    handler: (page: PublicPage<P, Q, undefined>) => unknown,
  ): void;
  publicPost<P = undefined, F = undefined>(
    path: string,
    spec: PublicSpec<P, undefined, F>,
    handler: (page: PublicPage<P, undefined, F>) => unknown,
  ): void;
}

/**
 * The step between the CSRF check and parsing: who is signed in (the page's base), or `{ answered }` when the
 * browser was answered instead (sent to sign in).
 */
type Gate<B> = (req: FastifyRequest, reply: FastifyReply, open: PublicBase) => Promise<B | { answered: unknown }>;

/** Public pages ask no one: their base is the request's. */
const publicGate: Gate<PublicBase> = async (_req, _reply, open) => open;

/** The page routes of `app` (or of a child instance of it, such as one reading multipart forms). */
export function pageRouter(app: App, oauth: OAuthServer, helpers: PageHelpers = pageHelpers(app, oauth)): PageRouter {
  /** One page route: CSRF on forms, then the gate, then params, query and form through their schemas. */
  function route<P, Q, F, B extends PublicBase>(
    method: 'GET' | 'POST',
    path: string,
    spec: Spec<P, Q, F, B> & { unreadable?: (page: B & Parts<P, Q, undefined>, err: unknown) => unknown },
    gate: Gate<B>,
    handler: (page: B & Parts<P, Q, F>) => unknown,
  ) {
    app.route({
      method,
      url: path,
      ...optionsOf(spec),
      handler: async (req, reply) => {
        const read = await bodyOf(req, reply, helpers, spec);
        if ('answered' in read) return read.answered;
        const open: PublicBase = { req, reply, csrf: () => helpers.csrf(req, reply) };
        const base = await gate(req, reply, open);
        if ('answered' in base) return base.answered;
        try {
          const params = parse(spec.params, req.params, paramFault);
          const query = parse(spec.query, req.query ?? {}, queryFault);
          if ('unreadable' in read) {
            if (!spec.unreadable) throw read.unreadable;
            return await spec.unreadable({ ...base, params, query, form: undefined }, read.unreadable);
          }
          const form = parse(spec.form, read.body, formFault);
          return await handler({ ...base, params, query, form });
        } catch (err) {
          return refuse(spec.refused, base, err);
        }
      },
    });
  }

  /** The signed-in pages' gate: the browser's user, or the sign-in redirect (or the route's `signedOut`). */
  function signedInGate<P, Q, F>(spec: SignedInSpec<P, Q, F>): Gate<PageBase> {
    return async (req, reply, open) => {
      const current = spec.signedOut ? await helpers.currentUser(req) : await signInFor(req, reply, spec);
      if (!current) return { answered: spec.signedOut ? await spec.signedOut(req, reply) : reply };
      return { ...open, current, ctx: serviceContextOf(req, current.actor) };
    };
  }

  async function signInFor<P, Q, F>(req: FastifyRequest, reply: FastifyReply, spec: SignedInSpec<P, Q, F>) {
    const param = (name: string) => RawParams.parse(req.params)[name] ?? '';
    const returnTo = typeof spec.returnTo === 'function' ? spec.returnTo(param) : spec.returnTo;
    return helpers.signedIn(req, reply, returnTo);
  }

  return {
    helpers,
    get: (path, spec, handler) => route('GET', path, spec, signedInGate(spec), handler),
    post: (path, spec, handler) => route('POST', path, spec, signedInGate(spec), handler),
    publicGet: (path, spec, handler) => route('GET', path, spec, publicGate, handler),
    publicPost: (path, spec, handler) => route('POST', path, spec, publicGate, handler),
  };
}
