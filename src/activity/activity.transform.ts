import type { Actor } from '../users/actor.ts';
import { toWireTime } from '../shared/time.ts';
import { describeEvent, hasAdditionalMetadata } from './activity.events.ts';
import type { FeedRow } from './activity.repository.ts';
import type { ActivityLogResource } from './activity.schema.ts';

export interface Viewer {
  userId: string;
  admin: boolean;
}

export function viewerOf(actor: Actor): Viewer {
  return { userId: actor.user.id, admin: actor.user.rootAdmin };
}

/** An entry's IP (and `properties.ip`) is the actor's own business, and administrators'. */
function maySeeIp(row: FeedRow, viewer: Viewer): boolean {
  return viewer.admin || (row.actor_id !== null && row.actor_id === viewer.userId);
}

export function toActivityLogResource(row: FeedRow, viewer: Viewer): ActivityLogResource {
  const properties = JSON.parse(row.properties) as Record<string, unknown>;
  const showIp = maySeeIp(row, viewer);
  if (!showIp && 'ip' in properties) properties.ip = null;
  const actor =
    row.actor_id !== null && row.actor_username !== null
      ? {
          object: 'user' as const,
          attributes: {
            uuid: row.actor_id,
            username: row.actor_username,
            email: row.actor_email ?? '',
            first_name: row.actor_first_name ?? '',
            last_name: row.actor_last_name ?? '',
          },
        }
      : { object: 'null_resource' as const, attributes: null };
  return {
    object: 'activity_log',
    attributes: {
      batch: row.batch,
      event: row.event,
      is_api: row.api_key_id !== null,
      ip: showIp ? row.ip : null,
      description: describeEvent(row.event, properties),
      properties,
      has_additional_metadata: hasAdditionalMetadata(row.event, properties),
      timestamp: toWireTime(row.timestamp),
    },
    relationships: { actor },
  };
}
