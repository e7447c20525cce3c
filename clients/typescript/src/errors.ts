/**
 * Errors of the Nous REST API as thrown by `NousClient`: one class per kind of problem-details
 * answer (RFC 9457, `application/problem+json`), chosen by its `code`, then its status.
 */

/** A problem-details answer's body as the server sends it (`ProblemDetail` in openapi.json). */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string | null;
  field?: string | null;
  errors?: Array<Record<string, unknown>> | null;
  request_id?: string | null;
}

/** Any error the server answered (4xx/5xx), or a request that could not reach it. */
export class NousError extends Error {
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  /** The machine-readable cause: `invalid_input`, `not_found`, `idempotency_key_reused`, ... */
  readonly code: string;
  /** The sentence for a person. */
  readonly detail: string;
  /** The request field at fault, as sent (body key, query parameter, or a path like `types.0`). */
  readonly field: string | null;
  /** The request's id (`X-Request-Id`), the key to the server's log. */
  readonly requestId: string | null;
  /** For schema errors: every location and message. */
  readonly errors: Array<Record<string, unknown>> | null;
  /** Seconds to wait before retrying, when the server said (`Retry-After`). */
  readonly retryAfter: number | null;

  constructor(
    status: number,
    problem: Problem,
    extra: { requestId?: string | null; retryAfter?: number | null; cause?: unknown } = {},
  ) {
    const detail = problem.detail ?? problem.title ?? `HTTP ${status}`;
    super(detail, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = new.target.name;
    this.status = status;
    this.code = problem.code ?? "nous_error";
    this.detail = detail;
    this.field = problem.field ?? null;
    this.requestId = problem.request_id ?? extra.requestId ?? null;
    this.errors = problem.errors ?? null;
    this.retryAfter = extra.retryAfter ?? null;
  }
}

/** 400, 408, 413 or 422: a field is missing, of the wrong type or out of range (see `field`). */
export class InvalidInputError extends NousError {}

/** 422 `guardrail_blocked`: a guardrail refused the operation. */
export class GuardrailError extends NousError {}

/** 401: no valid API key. */
export class AuthenticationError extends NousError {}

/** 403: the key may not do this (an admin key, or a user-bound key asking for agent-wide data). */
export class PermissionDeniedError extends NousError {}

/** 404: no such memory, session or job for this key's agent. */
export class NotFoundError extends NousError {}

/** 409: conflicts with the current state (an ended session, an `Idempotency-Key` in use, ...). */
export class ConflictError extends NousError {}

/** 5xx: the store or a provider failed; nothing was written. */
export class ServerError extends NousError {}

/** No answer: the server could not be reached (status 0, code `connection_error`). */
export class ConnectionError extends NousError {}

type ErrorClass = new (
  status: number,
  problem: Problem,
  extra?: { requestId?: string | null; retryAfter?: number | null },
) => NousError;

const BY_CODE: Record<string, ErrorClass> = {
  guardrail_blocked: GuardrailError,
  invalid_input: InvalidInputError,
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  not_found: NotFoundError,
  conflict: ConflictError,
};

const BY_STATUS: Record<number, ErrorClass> = {
  400: InvalidInputError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  408: InvalidInputError,
  409: ConflictError,
  413: InvalidInputError,
  422: InvalidInputError,
};

/** The typed error for an answer with `status` and (possibly) a problem-details body. */
export function errorFor(
  status: number,
  problem: Problem,
  extra: { requestId?: string | null; retryAfter?: number | null } = {},
): NousError {
  const cls =
    (problem.code ? BY_CODE[problem.code] : undefined) ??
    BY_STATUS[status] ??
    (status >= 500 ? ServerError : NousError);
  return new cls(status, problem, extra);
}
