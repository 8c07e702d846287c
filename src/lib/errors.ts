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
  constructor(message = 'Credit balance exhausted') {
    super(402, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'Insufficient scope') {
    super(403, message);
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found') {
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
  constructor(message = 'Service unavailable') {
    super(503, message);
  }
}

/** A PostgreSQL unique violation (23505), however deep the driver or drizzle wrapped it. */
export function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === '23505') return true;
  }
  return false;
}
