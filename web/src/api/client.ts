/**
 * The one way the panel talks to Aerie: the public client API, same origin, with the session
 * cookie the browser keeps (never a token in script reach). Every error body is the API's
 * envelope `{errors:[{code,status,detail,meta?}]}`; an ApiError carries it.
 */

export interface ErrorObject {
  code: string;
  status: string;
  detail: string;
  meta?: { source_field: string; rule: string; message: string };
}

export class ApiError extends Error {
  readonly status: number;
  readonly errors: ErrorObject[];
  /** Seconds to wait, from `Retry-After` (429s). */
  readonly retryAfter: number | null;

  constructor(status: number, errors: ErrorObject[], retryAfter: number | null = null) {
    super(errors[0]?.detail ?? `The request failed (HTTP ${status}).`);
    this.name = 'ApiError';
    this.status = status;
    this.errors = errors;
    this.retryAfter = retryAfter;
  }

  /**
   * Whether the error is about fields: a 422, or another refusal whose every error object names
   * its field (a schedule's cron expression that does not evaluate: a 400 naming `minute`).
   */
  get aboutFields(): boolean {
    if (this.status === 422) return true;
    return this.errors.length > 0 && this.errors.every((error) => error.meta?.source_field !== undefined);
  }

  /** A 422's messages by field (`description`, `allowed_ips.1`, …). */
  get fields(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const error of this.errors) {
      const field = error.meta?.source_field;
      if (field !== undefined && out[field] === undefined) out[field] = error.meta?.message ?? error.detail;
    }
    return out;
  }
}

/**
 * What the API's 422 (or another refusal naming its field) says about one field, or about any of
 * its items (`allowed_ips` → `allowed_ips.2`).
 */
export function fieldError(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError) || !error.aboutFields) return undefined;
  const fields = error.fields;
  if (fields[field] !== undefined) return fields[field];
  const item = Object.keys(fields).find((key) => key.startsWith(`${field}.`));
  return item === undefined ? undefined : fields[item];
}

/** The sentence to show for a failed request. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 429 && error.retryAfter !== null)
      return `${error.message} Try again in ${error.retryAfter} seconds.`;
    return error.message;
  }
  if (error instanceof TypeError) return 'Aerie could not be reached. Check your connection and try again.';
  return error instanceof Error ? error.message : 'Something went wrong.';
}

/** A failure that is not about one field (a wrong password is a 400 with a sentence), or null. */
export function formError(error: unknown): string | null {
  if (error === null) return null;
  if (error instanceof ApiError && error.aboutFields && Object.keys(error.fields).length > 0) return null;
  return errorMessage(error);
}

/**
 * A failure to show for the form as a whole when the form shows `shown` at their fields: the
 * sentence of a failure about no field, or what the API said about fields the form has not.
 */
export function formErrorBeside(error: unknown, shown: readonly string[]): string | null {
  const whole = formError(error);
  if (whole !== null || !(error instanceof ApiError)) return whole;
  const others = Object.entries(error.fields)
    .filter(([field]) => !shown.some((name) => field === name || field.startsWith(`${name}.`)))
    .map(([, message]) => message);
  return others.length === 0 ? null : others.join(' ');
}

type Unauthenticated = () => void;
let onUnauthenticated: Unauthenticated = () => undefined;

/** What to do when any call answers 401 (the session ended): set once, by the app. */
export function setUnauthenticatedHandler(handler: Unauthenticated): void {
  onUnauthenticated = handler;
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  body?: unknown;
  /** A 401 is the caller's to handle (logging in), not a sign that the session ended. */
  expect401?: boolean;
  signal?: AbortSignal;
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const { method = 'GET', body, expect401 = false, signal } = options;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? null : JSON.stringify(body),
    credentials: 'same-origin',
    signal: signal ?? null,
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const errors = (parsed as { errors?: ErrorObject[] } | undefined)?.errors ?? [];
    const retry = Number(response.headers.get('retry-after'));
    const error = new ApiError(response.status, errors, Number.isFinite(retry) && retry > 0 ? retry : null);
    if (response.status === 401 && !expect401) onUnauthenticated();
    throw error;
  }
  return parsed as T;
}

/** `?a=1&b=2` from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
