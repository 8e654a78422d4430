import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { markDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { RouteIndex } from '../../src/http/allowed-methods.ts';
import { installErrorHandling } from '../../src/http/error-handler.ts';

describe('the error handler, when the database is unavailable', () => {
  const warnings: unknown[] = [];
  const app = Fastify({
    logger: {
      level: 'warn',
      stream: { write: (line: string) => void warnings.push(JSON.parse(line)) },
    },
  });
  installErrorHandling(app, new RouteIndex());
  app.get('/lost', () => {
    throw markDatabaseUnavailable(new Error('Connection terminated unexpectedly'));
  });
  app.get('/refused', () => {
    throw Object.assign(new Error('the database system is starting up'), { code: '57P03' });
  });
  app.get('/broken', () => {
    throw Object.assign(new Error('syntax error at or near "selec"'), { code: '42601' });
  });
  afterAll(() => app.close());

  it.each(['/lost', '/refused'])(
    'answers %s with a 503 in the envelope, Retry-After and a warning',
    async (url) => {
      warnings.length = 0;
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(503);
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      expect(response.json()).toEqual({
        errors: [
          {
            code: 'ServiceUnavailableHttpException',
            status: '503',
            detail: 'The database is unavailable; try again shortly.',
          },
        ],
      });
      expect(warnings).toEqual([
        expect.objectContaining({ level: 40, msg: 'the database is unavailable; answered 503' }),
      ]);
    },
  );

  it('still answers any other database error with a 500 that tells nothing of it', async () => {
    const response = await app.inject({ method: 'GET', url: '/broken' });
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('selec');
  });
});
