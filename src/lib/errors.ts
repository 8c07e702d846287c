/**
 * One base class, one subclass per row of SPEC §7. The class name is the `error` field on the wire, so a
 * subclass's name is part of the API contract.
 */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** The §7 body; subclasses may add fields (ValidationError adds `details`). */
  toBody(): ErrorBody {
    return { error: this.name, message: this.message, statusCode: this.statusCode };
  }
}

export interface ErrorBody {
  error: string;
  message: string;
  statusCode: number;
  details?: ValidationDetail[];
}

export interface ValidationDetail {
  /** Where the problem is: `body.email`, `query.limit` ... */
  field: string;
  message: string;
}

export class BadRequestError extends AppError {
  constructor(message = 'Bad request') {
    super(400, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'Missing or invalid bearer token') {
    super(401, message);
  }
}

export class TokenExpiredError extends AppError {
  constructor(message = 'Access token expired') {
    super(401, message);
  }
}

export class CreditsExhaustedError extends AppError {
  constructor(message = 'Insufficient credits: the balance is exhausted; add credits to continue') {
    super(402, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'Insufficient scope') {
    super(403, message);
  }
}

export class NotFoundError extends AppError {
  /** `code`: the machine-readable reason OpenAI's error object carries on the OpenAI-compatible routes. */
  constructor(
    message = 'Not found',
    readonly code?: string,
  ) {
    super(404, message);
  }
}

export class NotAcceptableError extends AppError {
  constructor(message = 'Client must accept both application/json and text/event-stream') {
    super(406, message);
  }
}

export class ConflictError extends AppError {
  constructor(message = 'Conflict') {
    super(409, message);
  }
}

/** Beyond §7: a body over the configured size limit. */
export class PayloadTooLargeError extends AppError {
  constructor(message = 'Request body too large') {
    super(413, message);
  }
}

/** Beyond §7: a body whose Content-Type the route does not read. */
export class UnsupportedMediaTypeError extends AppError {
  constructor(message = 'Unsupported Content-Type') {
    super(415, message);
  }
}

export class ValidationError extends AppError {
  constructor(
    message = 'Validation failed',
    readonly details: ValidationDetail[] = [],
  ) {
    super(422, message);
  }

  override toBody(): ErrorBody {
    return { ...super.toBody(), details: this.details };
  }
}

export class TooManyRequestsError extends AppError {
  constructor(retryAfterSeconds: number, message = 'Rate limit exceeded') {
    super(429, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class InternalServerError extends AppError {
  constructor(message = 'Internal server error') {
    super(500, message);
  }
}

/** Beyond §7: the model provider (or another upstream) failed. */
export class BadGatewayError extends AppError {
  constructor(message = 'The upstream service failed') {
    super(502, message);
  }
}

/** Beyond §7: the upstream did not answer in time. */
export class GatewayTimeoutError extends AppError {
  constructor(message = 'The upstream service did not answer in time') {
    super(504, message);
  }
}

export class ServiceUnavailableError extends AppError {
  /** With `retryAfterSeconds`, a `Retry-After` header tells clients (and balancers) when to try again. */
  constructor(message = 'Service unavailable', retryAfterSeconds?: number) {
    super(503, message, retryAfterSeconds ? { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) } : {});
  }
}

/** How long a client is told to wait when the database cannot be reached: a restart or failover takes seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** The 503 for a database that cannot be reached: an infrastructure fault, never the caller's. */
export function databaseUnavailable(): ServiceUnavailableError {
  return new ServiceUnavailableError('The database is unavailable; retry shortly', DATABASE_RETRY_AFTER_SECONDS);
}

/** SQLSTATEs that mean the server cannot serve this connection now (classes 08, 57P, 53300; 55000 at connect). */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
/** Socket faults on the way to the database server. */
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** Messages pg and pg-pool give a lost or refused connection, which carry no code. */
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/, // "unexpectedly", "due to connection timeout"
  /^timeout exceeded when trying to connect/, // the pool's connectionTimeoutMillis
  /is not currently accepting connections/, // ALLOW_CONNECTIONS false (SQLSTATE 55000 at connect)
  /^Client has encountered a connection error and is not queryable/,
  /^Cannot use a pool after calling end on the pool/,
  /^PGlite is closed/,
];

/**
 * Whether the database could not be reached (refused, dropped, shutting down, out of connections) rather than a
 * query failing on its own terms. Drivers and drizzle wrap errors: the whole cause chain is looked at. A FATAL
 * server error ends the session, so it is a lost connection too. A bare socket code counts only as thrown by the
 * pool (at the top: `pool.connect` in a transaction) or under drizzle's query error: `fetch` to an upstream fails
 * with the same codes under its own TypeError, and that is not a database outage.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  let underQuery = false;
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, message, severity, query } = e as {
      code?: unknown;
      message?: unknown;
      severity?: unknown;
      query?: unknown;
    };
    if (typeof code === 'string' && UNAVAILABLE_SQLSTATES.has(code)) return true;
    if (typeof code === 'string' && UNAVAILABLE_SOCKET_CODES.has(code) && (depth === 0 || underQuery)) return true;
    if (severity === 'FATAL') return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => m.test(message))) return true;
    underQuery = typeof query === 'string'; // drizzle's DrizzleQueryError (its name is plain "Error")
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** A PostgreSQL unique violation (23505), however deep the driver or drizzle wrapped it. */
export function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === '23505') return true;
  }
  return false;
}
