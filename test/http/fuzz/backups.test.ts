/**
 * The seeded fuzz (see `malformed-requests.ts`: what is sent, and what must hold of every answer),
 * for backups: listing, creating, reading, locking, deleting, downloading (and the download
 * link itself, `GET /download/backup`) and restoring them (`/api/client/servers/{server}/backups…`).
 */
import { fuzzSurface } from './malformed-requests.ts';

fuzzSurface('backups', 'backup requests');
