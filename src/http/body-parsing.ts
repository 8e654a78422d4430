import secureJson from 'secure-json-parse';
import type { FastifyInstance } from 'fastify';

/**
 * Client libraries of the reference panel send `Content-Type: application/json` on every
 * request, often with an empty body or `null`; both mean "no fields". Vendor JSON types
 * (`application/vnd.pterodactyl.v1+json`) are JSON too. Prototype poisoning is refused.
 */
export function installBodyParsing(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  const parse = (
    _request: unknown,
    body: string,
    done: (err: Error | null, value?: unknown) => void,
  ): void => {
    if (body.trim() === '') return done(null, {});
    try {
      const value: unknown = secureJson.parse(body, undefined, {
        protoAction: 'error',
        constructorAction: 'error',
      });
      done(null, value ?? {});
    } catch {
      const error = Object.assign(new Error('invalid JSON body'), {
        statusCode: 400,
        code: 'FST_ERR_CTP_INVALID_JSON',
      });
      done(error);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser(/^application\/[\w.+-]*\+json$/, { parseAs: 'string' }, parse);
  // `curl -X POST -d ''` labels its empty body as a form; empty, it means no fields too.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      if ((body as string).trim() === '') return done(null, {});
      done(Object.assign(new Error('form bodies are not accepted'), { statusCode: 415 }));
    },
  );

  // A POST or DELETE with no body at all (or an empty one, whatever its type) is an empty object as well.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined || request.body === null || request.body === '') request.body = {};
    done();
  });
}
