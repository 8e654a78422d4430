import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * Fastify's request logging, one line per request: nothing when a request arrives, and when its
 * response is finished one `info` line with the method, the URL (secret query values are taken
 * out as the line is written: see `loggerOptions`), the status and the time taken, in
 * milliseconds. A response that fails on the way out is logged at `error` with its error, still
 * in one line. Everything else Fastify logs about requests is logged as before; the error
 * handler logs the errors behind a 5xx itself (src/http/error-handler.ts).
 *
 * A route's `logLevel` still applies: a route at `warn` (the health checks) logs no request line.
 */
export class OneLineRequestLog extends LogController {
  override incomingRequest(): void {
    // Logged with the outcome, in requestCompleted.
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    const responseTime = Math.round(reply.elapsedTime * 10) / 10;
    const fields = { method: request.method, url: request.url, statusCode: reply.statusCode, responseTime };
    const line = `${fields.method} ${fields.url} ${fields.statusCode} ${responseTime.toFixed(1)} ms`;
    if (error) reply.log.error({ ...fields, err: error }, `${line}: ${error.message}`);
    else reply.log.info(fields, line);
  }
}
