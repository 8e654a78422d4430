import type { FastifyInstance } from 'fastify';

export function openApiRoutes(app: FastifyInstance): void {
  app.get('/api/openapi.json', { schema: { hide: true } }, () => app.swagger());
}
