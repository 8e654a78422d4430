import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ActivityListSchema, ActivityQuerySchema } from '../../activity/activity.schema.ts';
import type { Services } from '../../services.ts';
import { authenticatedContextOf, pageUrlOf } from '../request-context.ts';

export function activityRoutes(app: FastifyInstance, { activity }: Pick<Services, 'activity'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const url of ['/api/client/activity', '/api/client/account/activity']) {
    typed.get(
      url,
      {
        schema: {
          tags: ['activity'],
          summary: "The caller's activity feed: every entry about their account",
          security: [{ bearerAuth: [] }],
          querystring: ActivityQuerySchema,
          response: { 200: ActivityListSchema },
        },
      },
      (request) => {
        const { actor } = authenticatedContextOf(request);
        return activity.list(actor, { type: 'user', id: actor.user.id }, request.query, pageUrlOf(request));
      },
    );
  }
}
