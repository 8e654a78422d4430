import { createHash } from 'node:crypto';
import { toWireTime } from '../shared/time.ts';
import type { Subuser } from './subuser.ts';
import type { SubuserResource } from './subuser.schema.ts';

export function toSubuserResource(subuser: Subuser): SubuserResource {
  const { user } = subuser;
  return {
    object: 'server_subuser',
    attributes: {
      uuid: user.id,
      username: user.username,
      email: user.email,
      image: `https://gravatar.com/avatar/${createHash('md5').update(user.email.trim().toLowerCase()).digest('hex')}`,
      '2fa_enabled': false,
      created_at: toWireTime(user.createdAt),
      permissions: [...subuser.permissions],
    },
  };
}
