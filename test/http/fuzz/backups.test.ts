/**
 * The seeded fuzz (see `malformed-requests.ts`: what is sent, and what must hold of every answer),
 * for backups: listing, creating, reading, locking, deleting, downloading (and the download
 * link itself, `GET /download/backup`) and restoring them (`/api/client/servers/{server}/backups…`).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer } from '../../support/harness.ts';
import { app, COUNT, fx, repair, runFuzz, SEED, startFuzzApp } from './malformed-requests.ts';

beforeAll(startFuzzApp);
afterAll(async () => app?.close());

it(`answers the backup requests of ${COUNT} malformed ones (seed ${SEED}) without a 5xx, a hang or an error outside the envelope`, async () => {
  const { sent, byStatus, failures, report } = await runFuzz('backups');
  expect(failures.length, report).toBe(0);

  // The run stayed deep: the fixtures are whole at the end, and most requests got past the door.
  await repair();
  const deep = await app.http.inject({
    method: 'GET',
    url: `/api/client/servers/${fx.server.identifier}/backups/${fx.backups.main}`,
    headers: bearer(fx.tokens.owner),
  });
  expect(deep.statusCode, deep.body).toBe(200);
  if (sent >= 500) {
    const ok = Object.entries(byStatus)
      .filter(([status]) => status.startsWith('2'))
      .reduce((n, [, c]) => n + c, 0);
    expect(ok / sent, `only ${ok} of ${sent} requests succeeded: the fixtures broke`).toBeGreaterThan(0.1);
    expect((byStatus['401'] ?? 0) / sent, 'too many 401s: the credentials broke').toBeLessThan(0.3);
  }
}, 180_000);
