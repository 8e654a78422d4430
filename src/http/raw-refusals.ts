import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionError, FastifyInstance } from 'fastify';
import { BadRequestError, ServiceUnavailableError } from '../shared/errors.ts';
import type { RouteIndex } from './allowed-methods.ts';
import { frameworkErrorEnvelope, unroutedAnswer } from './error-handler.ts';

/**
 * Requests Node refuses before Fastify ever sees them, which Node (or Fastify's defaults) would
 * answer with an empty body or a body of their own, or not at all. Each gets the envelope here,
 * with `X-Request-Id` and `Connection: close`.
 */

/** Node's HTTP parser errors that are not a plain 400, by code. */
const PARSER_ERROR_STATUS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/** Writes a whole error response to a socket Node has handed over, then closes it. */
function endWithError(
  socket: Duplex,
  status: number,
  body: object,
  requestId: string,
  headers: Record<string, string> = {},
): void {
  const json = JSON.stringify(body);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(json)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    `X-Request-Id: ${requestId}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${json}`, () => socket.destroy());
}

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the bytes of a request (request
 * line and headers over 16 KiB, a raw NUL or non-ASCII byte in the target, a bad or doubled
 * Content-Length, Content-Length beside Transfer-Encoding, …) before there is a request to route.
 */
export function clientErrorHandler(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status = PARSER_ERROR_STATUS[error.code] ?? 400;
  const requestId = randomUUID();
  // Only the code: the raw bytes of the request may hold credentials.
  this.log.debug({ code: error.code, status, requestId }, 'refused a request the HTTP parser could not read');
  // Like Node itself, never write into a response already under way on this connection.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  endWithError(socket, status, frameworkErrorEnvelope(status), requestId);
}

/**
 * The refusals Node would otherwise make itself: an HTTP/1.1 request without Host (400; Fastify
 * is built with `http.requireHostHeader: false` so that it reaches this hook), an `Expect` other
 * than `100-continue` (417, Node's is bodiless), and CONNECT (Node would close the connection
 * without a word; here it is a 405 or 404 like any other method no route takes).
 */
export function refuseUnservableRequests(app: FastifyInstance, routes: RouteIndex): void {
  app.addHook('onRequest', async (request, reply) => {
    const { httpVersionMajor, httpVersionMinor } = request.raw;
    if (httpVersionMajor === 1 && httpVersionMinor >= 1 && request.headers.host === undefined) {
      reply.header('connection', 'close');
      throw new BadRequestError('An HTTP/1.1 request must carry a Host header.');
    }
  });
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify(frameworkErrorEnvelope(417));
    response.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': randomUUID(),
      connection: 'close',
    });
    response.end(body);
    request.resume();
  });
  app.server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    const { status, headers, body } = unroutedAnswer(routes, 'CONNECT', request.url ?? '/');
    endWithError(socket, status, body, randomUUID(), headers);
  });
}

/**
 * Once the server is closing, a request that still arrives on an open connection gets a 503 in
 * the envelope (Fastify's own would have a body of its own) and the connection is closed.
 */
export function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) {
      reply.header('connection', 'close');
      throw new ServiceUnavailableError('Aerie is shutting down; try again in a moment.');
    }
  });
}
