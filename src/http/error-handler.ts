import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { AppError } from '../shared/errors.ts';
import type { RouteIndex } from './allowed-methods.ts';
import { errorEnvelope, validationEnvelope } from './envelope.ts';
import { toFieldErrors } from './validation.ts';

/** Codes and words for the errors Fastify itself raises (bad JSON, body too large, …). */
const FRAMEWORK_ERRORS: Record<number, [code: string, detail: string]> = {
  400: ['BadRequestHttpException', 'The request could not be understood.'],
  404: ['NotFoundHttpException', 'The requested resource could not be found on the server.'],
  405: ['MethodNotAllowedHttpException', 'The method is not supported for this route.'],
  406: ['NotAcceptableHttpException', 'The requested representation is not available.'],
  408: ['RequestTimeoutHttpException', 'The request did not arrive in time.'],
  413: ['PayloadTooLargeHttpException', 'The request body is too large.'],
  414: ['UriTooLongHttpException', 'The request URI is too long.'],
  415: [
    'UnsupportedMediaTypeHttpException',
    'The request body must be JSON (Content-Type: application/json).',
  ],
  417: ['ExpectationFailedHttpException', 'The expectation given in the Expect header cannot be met.'],
  431: ['RequestHeaderFieldsTooLargeHttpException', 'The request line and headers are too large.'],
};

const INVALID_JSON_CODES = new Set(['FST_ERR_CTP_INVALID_JSON', 'FST_ERR_CTP_INVALID_CONTENT_LENGTH']);

/**
 * When a client should try again after the database dropped its connection: a restart takes a
 * second or two, a failover a few more, and the pool reconnects on the next request.
 */
const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * The one place that writes errors: every failure, from a service, from validation, from the
 * framework or unexpected, leaves as the envelope `{"errors":[{"code","status","detail"}]}`.
 */
export function installErrorHandling(app: FastifyInstance, routes: RouteIndex): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A route may have set the headers of what it meant to send (a download's type, length and
    // file name) before it failed: the error goes out as JSON instead.
    reply.removeHeader('content-length').removeHeader('content-disposition');
    reply.type('application/json; charset=utf-8');
    if (error.validation) {
      const part = (error as { validationContext?: string }).validationContext ?? 'body';
      // A path segment that fails its schema (too long to be any id) names nothing: 404, like
      // any unknown server, backup, subuser or key ("malformed" is never told from "not yours").
      if (part === 'params') {
        return reply.code(404).send(errorEnvelope(404, 'NotFoundHttpException', FRAMEWORK_ERRORS[404]![1]));
      }
      return reply.code(422).send(validationEnvelope(toFieldErrors(error.validation as never, part)));
    }
    if (error instanceof AppError) {
      const body =
        'fields' in error && Array.isArray(error.fields)
          ? validationEnvelope(error.fields as never)
          : errorEnvelope(error.status, error.code, error.message, error.field);
      return reply.code(error.status).headers(error.headers).send(body);
    }
    if (isDatabaseUnavailable(error)) {
      // A restart, a failover or a dropped connection, not a fault of this request or of Aerie:
      // the client is told to come back, and the operator sees a warning, not an internal error.
      request.log.warn({ err: error, requestId: request.id }, 'the database is unavailable; answered 503');
      return reply
        .code(503)
        .header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
        .send(
          errorEnvelope(
            503,
            'ServiceUnavailableHttpException',
            'The database is unavailable; try again shortly.',
          ),
        );
    }
    const status = error.statusCode ?? 500;
    const known = FRAMEWORK_ERRORS[status];
    if (status < 500 && known !== undefined) {
      const detail = INVALID_JSON_CODES.has(error.code) ? 'The request body is not valid JSON.' : known[1];
      return reply.code(status).send(errorEnvelope(status, known[0], detail));
    }
    if (status < 500) {
      return reply
        .code(status)
        .send(errorEnvelope(status, 'HttpException', 'The request could not be processed.'));
    }
    request.log.error({ err: error, requestId: request.id }, 'unexpected error while handling a request');
    return reply
      .code(500)
      .send(
        errorEnvelope(
          500,
          'InternalServerError',
          `An unexpected error was encountered while processing this request (request ${request.id}).`,
        ),
      );
  });

  app.setNotFoundHandler((request, reply) => {
    const { status, headers, body } = unroutedAnswer(routes, request.method, request.url);
    return reply.code(status).headers(headers).send(body);
  });
}

/** A request no route takes: 405 with `Allow` when its path exists under other methods, else 404. */
export function unroutedAnswer(
  routes: RouteIndex,
  method: string,
  url: string,
): { status: number; headers: Record<string, string>; body: ReturnType<typeof errorEnvelope> } {
  const allowed = routes.allowedMethods(url.split('?')[0] ?? '/');
  if (allowed.length > 0) {
    const detail = `The ${method} method is not supported for this route.`;
    return {
      status: 405,
      headers: { allow: allowed.join(', ') },
      body: errorEnvelope(405, 'MethodNotAllowedHttpException', detail),
    };
  }
  return { status: 404, headers: {}, body: frameworkErrorEnvelope(404) };
}

/** The envelope of an error the framework or Node raises, by status (400 for any other). */
export function frameworkErrorEnvelope(status: number): ReturnType<typeof errorEnvelope> {
  const known = FRAMEWORK_ERRORS[status];
  return known === undefined
    ? errorEnvelope(400, ...FRAMEWORK_ERRORS[400]!)
    : errorEnvelope(status, ...known);
}

/**
 * Fastify answers some requests before any route or hook runs: a path with broken
 * percent-encoding, or a path parameter longer than the router allows. Such a path names
 * nothing that exists, so it is a 404 in the envelope like any other.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const known = error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  const [status, code, detail] = known
    ? [404, 'NotFoundHttpException', FRAMEWORK_ERRORS[404]![1]]
    : [400, 'BadRequestHttpException', FRAMEWORK_ERRORS[400]![1]];
  void reply
    .code(status)
    .header('x-request-id', request.id)
    .send(errorEnvelope(status, code, detail));
}
