/**
 * The seeded fuzz (see `malformed-requests.ts`: what is sent, and what must hold of every answer),
 * for the account's API keys: listing, creating and deleting them
 * (`/api/client/account/api-keys`).
 */
import { fuzzSurface } from './malformed-requests.ts';

fuzzSurface('api-keys', 'API key requests');
