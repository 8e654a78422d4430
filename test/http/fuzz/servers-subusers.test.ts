/**
 * The seeded fuzz (see `malformed-requests.ts`: what is sent, and what must hold of every answer),
 * for servers and their subusers: the server list (`GET /api/client`), a server, its
 * subusers (`…/users`, `…/users/{user}`), and `/api/client/servers` and `…/files/list`, where
 * nothing lives.
 */
import { fuzzSurface } from './malformed-requests.ts';

fuzzSurface('servers-subusers', 'server and subuser requests');
