/**
 * The seeded fuzz (see `malformed-requests.ts`: what is sent, and what must hold of every answer),
 * for the account and the session (`GET /api/client/account`, `POST /auth/login`,
 * `POST /auth/logout`) and for what lies outside the client API (`/api/openapi.json`, `/`, and
 * `/api/application/users`, where nothing lives).
 */
import { fuzzSurface } from './malformed-requests.ts';

fuzzSurface('account-auth', 'account and auth requests');
