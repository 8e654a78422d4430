import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ActivityListSchema, ActivityQuerySchema } from '../../activity/activity.schema.ts';
import { toActivityLogResource, viewerOf } from '../../activity/activity.transform.ts';
import type { Services } from '../../services.ts';
import { clientSchema } from '../client-route.ts';
import { listEnvelope } from '../pagination.ts';
import { authenticatedContextOf } from '../request-context.ts';

export function activityRoutes(app: FastifyInstance, { activity }: Pick<Services, 'activity'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const url of ['/api/client/activity', '/api/client/account/activity']) {
    typed.get(
      url,
      {
        schema: clientSchema('activity', "The caller's activity feed: every entry about their account", {
          querystring: ActivityQuerySchema,
          response: { 200: ActivityListSchema },
        }),
      },
      async (request) => {
        const { actor } = authenticatedContextOf(request);
        const page = await activity.list(actor, { type: 'user', id: actor.user.id }, request.query);
        return listEnvelope(request, page, (row) => toActivityLogResource(row, viewerOf(actor)));
      },
    );
  }
}
