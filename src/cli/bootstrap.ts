import { randomUUID } from 'node:crypto';
import type { Services } from '../services.ts';

/**
 * On the first start against an empty database: an administrator and an API key, printed once.
 * Returns whether it created them.
 */
export async function bootstrapAdministrator(
  services: Services,
  print: (text: string) => void,
): Promise<boolean> {
  if ((await services.users.count()) > 0) return false;
  const { user, password } = await services.users.create({
    username: 'admin',
    email: 'admin@example.com',
    firstName: 'Administrator',
    admin: true,
  });
  const { token } = await services.apiKeys.create(
    { batch: randomUUID(), ip: null, userAgent: 'aerie', actor: { user, apiKeyId: null, sessionId: null } },
    { description: 'Created at first start', allowed_ips: [] },
  );
  print(
    [
      '',
      'Aerie created its first administrator. This is shown once; keep it somewhere safe.',
      `  username: ${user.username}`,
      `  password: ${password}`,
      `  API key:  ${token}`,
      '',
    ].join('\n'),
  );
  return true;
}
