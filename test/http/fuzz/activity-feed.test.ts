/**
 * The seeded fuzz (see `malformed-requests.ts`: what is sent, and what must hold of every answer),
 * for the activity feeds: the caller's, the account's and a server's (`GET /api/client/activity`,
 * `GET /api/client/account/activity`, `GET /api/client/servers/{server}/activity`).
 */
import { fuzzSurface } from './malformed-requests.ts';

fuzzSurface('activity-feed', 'activity feed requests');
