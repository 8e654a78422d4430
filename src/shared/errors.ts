/**
 * The closed set of errors a service may throw. The HTTP error handler turns each into the
 * envelope `{"errors":[{"code","status","detail"}]}`; anything else becomes a 500 with no details.
 */
export interface FieldError {
  /** The failing field: `per_page`, `filter[event]`, `allowed_ips.3`. */
  field: string;
  /** The rule it broke, named as the reference panel names them: `min`, `max`, `integer`, `in`, … */
  rule: string;
  message: string;
}

export abstract class AppError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  readonly headers: Record<string, string> = {};
  /** The field the error is about, when one is: its envelope's `meta` names it. */
  readonly field: FieldError | undefined = undefined;
}

export class BadRequestError extends AppError {
  readonly status = 400;
  constructor(
    message: string,
    readonly code = 'BadRequestHttpException',
  ) {
    super(message);
  }
}

/**
 * The reference panel's code for a 400 whose message is meant for the user. With `field`, the
 * envelope also names the field at fault in `meta` (`source_field`, `rule`, `message`), as a 422
 * does: the reference panel's detail, and what exactly was wrong.
 */
export class DisplayError extends BadRequestError {
  override readonly field: FieldError | undefined;
  constructor(message: string, field?: FieldError) {
    super(message, 'DisplayException');
    this.field = field;
  }
}

export class NotAuthenticatedError extends AppError {
  readonly status = 401;
  readonly code = 'NotAuthenticatedException';
  constructor() {
    super('You are not authenticated to access this route.');
  }
}

export class ForbiddenError extends AppError {
  readonly status = 403;
  readonly code = 'AccessDeniedHttpException';
  constructor(message = 'This action is unauthorized.') {
    super(message);
  }
}

export class NotFoundError extends AppError {
  readonly status = 404;
  readonly code = 'NotFoundHttpException';
  constructor(message = 'The requested resource could not be found on the server.') {
    super(message);
  }
}

export class ConflictError extends AppError {
  readonly status = 409;
  readonly code = 'ServerStateConflictException';
}

export class ValidationError extends AppError {
  readonly status = 422;
  readonly code = 'ValidationException';
  constructor(readonly fields: FieldError[]) {
    super('The given data was invalid.');
  }
}

export class TooManyRequestsError extends AppError {
  readonly status = 429;
  readonly code = 'TooManyRequestsHttpException';
  constructor(retryAfterSeconds: number) {
    super('Too many requests, please slow down.');
    this.headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  }
}

export class ServiceUnavailableError extends AppError {
  readonly status = 503;
  readonly code = 'ServiceUnavailableHttpException';
}

/** Runs `work`; whatever it throws is thrown again as `translate` makes it. */
export async function translatingErrors<T>(
  work: () => Promise<T>,
  translate: (error: unknown) => unknown,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translate(error);
  }
}
