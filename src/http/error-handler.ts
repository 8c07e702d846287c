import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import {
  AppError,
  BadRequestError,
  databaseUnavailable,
  type ErrorBody,
  ForbiddenError,
  InternalServerError,
  isDatabaseUnavailable,
  NotFoundError,
  PayloadTooLargeError,
  TooManyRequestsError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../lib/errors.ts';
import { anthropicErrorType } from '../llm-upstreams/anthropic-messages.ts';

const CONTEXT_NAMES: Record<string, string> = {
  querystring: 'query',
  body: 'body',
  params: 'params',
  headers: 'headers',
};

/** Maps whatever was thrown to the §7 body. Only AppErrors and known framework faults keep their message. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as FastifyError & { validationContext?: string };
  if (hasZodFastifySchemaValidationErrors(e)) {
    const where = CONTEXT_NAMES[e.validationContext ?? ''] ?? e.validationContext ?? 'request';
    const details = e.validation.flatMap((v) => {
      const path = [where, ...v.instancePath.split('/').filter(Boolean)];
      // A strict object names the unknown keys in one issue: give each its own entry, so each field is named.
      const unknown = v.keyword === 'unrecognized_keys' ? (v.params as { keys?: unknown }).keys : undefined;
      if (Array.isArray(unknown) && unknown.length) {
        return unknown.map((k) => ({ field: [...path, String(k)].join('.'), message: 'is not an allowed field' }));
      }
      return [{ field: path.join('.'), message: v.message ?? 'is invalid' }];
    });
    const summary = details.map((d) => `${d.field}: ${d.message}`).join('; ');
    return new ValidationError(`Validation failed: ${summary}`, details);
  }
  if (isResponseSerializationError(e)) return new InternalServerError();
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeError('Unsupported Content-Type; send application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError('Request body too large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new BadRequestError('Body cannot be empty when Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new BadRequestError('Malformed JSON body');
    case 'FST_ERR_BAD_URL':
      return new BadRequestError('Malformed URL: invalid percent-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new BadRequestError('A path segment of the URL is too long');
  }
  if (e instanceof SyntaxError && e.statusCode === 400) return new BadRequestError('Malformed JSON body');
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status === 404) return new NotFoundError(e.message);
  if (status === 403) return new ForbiddenError(e.message);
  if (status === 413) return new PayloadTooLargeError(e.message);
  if (status === 415) return new UnsupportedMediaTypeError(e.message);
  if (status === 429) return new TooManyRequestsError(60);
  if (status >= 400 && status < 500) return new BadRequestError(e.message || 'Bad request');
  // PostgreSQL refuses NUL in text ("invalid byte sequence"): the caller's input, not our fault.
  if (databaseCodeOf(err, ['22021', '22P05']))
    return new BadRequestError('Text must not contain NUL (\\u0000) characters');
  // The database refused or dropped the connection: a 503 the client may retry, not a 500.
  if (isDatabaseUnavailable(err)) return databaseUnavailable();
  return new InternalServerError();
}

/**
 * The routes an OpenAI client calls. Its SDKs build an error's message from `error.message` and show a plain
 * string `error` only as `422 "ValidationError"`, so there `error` is OpenAI's object, `type` holding the §7 name;
 * `message`, `statusCode` (and `details`) stay at the top as everywhere else.
 */
const OPENAI_COMPATIBLE =
  /^\/api\/v1\/(?:chat\/completions|models|embeddings|agents\/[^/]+\/chat\/completions)\/?(?:[?#]|$)/;
/** The Anthropic-compatible routes answer Anthropic's error shape, `message` and `statusCode` beside it. */
const ANTHROPIC_COMPATIBLE = /^\/api\/v1\/messages(?:\/count_tokens)?\/?(?:[?#]|$)/;

/** Which error body a path answers: the service's own, OpenAI's or Anthropic's. */
export type ErrorShape = 'service' | 'openai' | 'anthropic';

export function errorShapeOf(url: string): ErrorShape {
  if (ANTHROPIC_COMPATIBLE.test(url)) return 'anthropic';
  return OPENAI_COMPATIBLE.test(url) ? 'openai' : 'service';
}

/** The §7 body in a path's shape; `openAiCode` is a code of OpenAI's own (`model_not_found`). */
export function shapeErrorBody(shape: ErrorShape, body: ErrorBody, openAiCode: string | null = null): object {
  if (shape === 'anthropic') {
    const { error: _name, ...rest } = body;
    const error = { type: anthropicErrorType(body.statusCode), message: body.message };
    return { type: 'error', error, ...rest };
  }
  if (shape === 'service') return body;
  // A code of OpenAI's own comes with OpenAI's type for it, as its SDK expects.
  const type = openAiCode ? 'invalid_request_error' : body.error;
  return { ...body, error: { message: body.message, type, param: null, code: openAiCode } };
}

export function errorBodyFor(req: FastifyRequest, appErr: AppError): object {
  const code = appErr instanceof NotFoundError && appErr.code ? appErr.code : null;
  return shapeErrorBody(errorShapeOf(req.url), appErr.toBody(), code);
}

/**
 * For faults fastify answers before any hook runs (a URL it cannot decode, an over-long path parameter):
 * the same §7 body and X-Request-Id as every other error. Passed as fastify's `frameworkErrors` option.
 */
export function frameworkErrorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const appErr = toAppError(err);
  if (appErr.statusCode >= 500) req.log.error({ err, requestId: req.id }, 'request failed');
  reply.code(appErr.statusCode).header('X-Request-Id', req.id).headers(appErr.headers).send(errorBodyFor(req, appErr));
}

/** `onDatabaseUnavailable`: told of every request that met an unreachable database (see DatabaseOutage). */
export function registerErrorHandler(app: FastifyInstance, onDatabaseUnavailable?: () => void): void {
  app.setErrorHandler((err, req, reply) => {
    if (onDatabaseUnavailable && isDatabaseUnavailable(err)) onDatabaseUnavailable();
    const appErr = toAppError(err);
    if (appErr.statusCode >= 500) req.log.error({ err, requestId: req.id }, 'request failed');
    reply.code(appErr.statusCode).headers(appErr.headers).send(errorBodyFor(req, appErr));
  });
}

/** The SQLSTATE of a database error anywhere in the cause chain (drivers and drizzle wrap it), if listed. */
function databaseCodeOf(err: unknown, codes: string[]): string | undefined {
  for (
    let e: unknown = err, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.includes(code)) return code;
  }
  return undefined;
}
