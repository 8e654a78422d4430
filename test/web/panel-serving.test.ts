/**
 * How Aerie serves the web panel (src/http/panel.ts), on a panel directory made here: its page
 * and files with their caching and security headers, the client-side routes, and the API paths
 * that keep their JSON answers whatever a browser asks.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PANEL_CSP } from '../../src/http/panel.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
const INDEX =
  '<!doctype html><title>Aerie</title><script type="module" src="/assets/app-AbC123.js"></script>';

function expectPanelHeaders(headers: Record<string, unknown>): void {
  expect(headers['content-security-policy']).toBe(PANEL_CSP);
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['referrer-policy']).toBe('same-origin');
}

function expectJson404(res: { statusCode: number; headers: Record<string, unknown>; body: string }): void {
  expect(res.statusCode, res.body).toBe(404);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(JSON.parse(res.body)).toEqual({
    errors: [
      {
        code: 'NotFoundHttpException',
        status: '404',
        detail: 'The requested resource could not be found on the server.',
      },
    ],
  });
}

describe('the web panel, built', () => {
  let app: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-panel-'));
    fs.mkdirSync(path.join(dir, 'assets'));
    fs.writeFileSync(path.join(dir, 'index.html'), INDEX);
    fs.writeFileSync(path.join(dir, 'assets/app-AbC123.js'), 'console.log("panel")');
    fs.writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    app = await startTestApp({ env: { AERIE_PANEL_DIR: dir } });
  });
  afterAll(async () => {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves its page at / and /index.html, revalidated every time, with the security headers', async () => {
    for (const url of ['/', '/index.html']) {
      const res = await app.http.inject({ method: 'GET', url, headers: HTML });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expectPanelHeaders(res.headers);
      expect(res.body).toBe(INDEX);
      const again = await app.http.inject({
        method: 'GET',
        url,
        headers: { ...HTML, 'if-none-match': String(res.headers.etag) },
      });
      expect(again.statusCode).toBe(304);
      expect(again.body).toBe('');
    }
  });

  it('has a strict Content-Security-Policy', () => {
    const directives: Record<string, string> = Object.fromEntries(
      PANEL_CSP.split(';').map((part): [string, string] => {
        const [name = '', ...values] = part.trim().split(/\s+/);
        return [name, values.join(' ')];
      }),
    );
    expect(directives).toMatchObject({
      'default-src': "'self'",
      'script-src': "'self'",
      'style-src': "'self'",
      'img-src': "'self' data:",
      'object-src': "'none'",
      'base-uri': "'none'",
      'frame-ancestors': "'none'",
      'form-action': "'self'",
    });
    expect(PANEL_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  });

  it('caches hashed assets for a year and other files not at all', async () => {
    const asset = await app.http.inject({ method: 'GET', url: '/assets/app-AbC123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toMatch(/^application\/javascript/);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expectPanelHeaders(asset.headers);
    expect(asset.body).toBe('console.log("panel")');
    const head = await app.http.inject({ method: 'HEAD', url: '/assets/app-AbC123.js' });
    expect(head.statusCode).toBe(200);

    const icon = await app.http.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('serves the page for client-side routes a browser navigates to', async () => {
    for (const url of [
      '/servers',
      '/servers/1a2b3c4d/users',
      '/activity?event=auth%3Alogin&page=2',
      '/login',
    ]) {
      const res = await app.http.inject({ method: 'GET', url, headers: HTML });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe(INDEX);
      expect(res.headers['cache-control']).toBe('no-cache');
      expectPanelHeaders(res.headers);
    }
    const head = await app.http.inject({ method: 'HEAD', url: '/account', headers: HTML });
    expect(head.statusCode).toBe(200);
  });

  it('keeps the JSON answers of the API paths, of non-GET requests and of requests not for a page', async () => {
    for (const url of [
      '/api/client/nope',
      '/api/nope',
      '/api',
      '/auth/nope',
      '/health/nope',
      '/metrics/x',
      '/download/nope',
      '/API/client/nope',
    ]) {
      expectJson404(await app.http.inject({ method: 'GET', url, headers: HTML }));
    }
    // Not asking for HTML (a script, an API client): the usual 404.
    expectJson404(await app.http.inject({ method: 'GET', url: '/servers' }));
    expectJson404(
      await app.http.inject({ method: 'GET', url: '/servers', headers: { accept: 'application/json' } }),
    );
    expectJson404(await app.http.inject({ method: 'POST', url: '/servers', headers: HTML, payload: {} }));
    // A missing asset or an odd name under /assets/ is a 404, never the page.
    for (const url of [
      '/assets/missing-x1.js',
      '/assets/.hidden',
      '/assets/a/b.js',
      '/assets/%2e%2e%2findex.html',
    ])
      expectJson404(await app.http.inject({ method: 'GET', url, headers: HTML }));
    // The API still answers as before, to a browser too.
    const api = await app.http.inject({ method: 'GET', url: '/api/client/account', headers: HTML });
    expect(api.statusCode).toBe(401);
    expect(api.headers['content-type']).toMatch(/^application\/json/);
    const live = await app.http.inject({ method: 'GET', url: '/health/live', headers: HTML });
    expect(live.json()).toEqual({ status: 'ok' });
    expect(live.headers['content-security-policy']).toBeUndefined();
  });

  it('answers other methods on its paths with the API envelope', async () => {
    const res = await app.http.inject({ method: 'POST', url: '/', headers: HTML, payload: {} });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.json()).toMatchObject({ errors: [{ code: 'MethodNotAllowedHttpException', status: '405' }] });
  });

  it('leaves the panel out of the OpenAPI document', async () => {
    const doc = (await app.http.inject({ method: 'GET', url: '/api/openapi.json' })).json<{
      paths: Record<string, unknown>;
    }>();
    const paths = Object.keys(doc.paths);
    expect(paths).toContain('/api/client/account');
    for (const panelPath of ['/', '/index.html', '/favicon.svg', '/assets/{file}'])
      expect(paths).not.toContain(panelPath);
  });

  it('serves a new build without a restart', async () => {
    const next = '<!doctype html><title>Aerie 2</title>';
    fs.writeFileSync(path.join(dir, 'index.html'), next);
    fs.utimesSync(path.join(dir, 'index.html'), new Date(), new Date(Date.now() + 5000));
    fs.writeFileSync(path.join(dir, 'assets/app-Next99.js'), 'next');
    expect((await app.http.inject({ method: 'GET', url: '/', headers: HTML })).body).toBe(next);
    expect((await app.http.inject({ method: 'GET', url: '/assets/app-Next99.js' })).body).toBe('next');
  });
});

describe('the web panel, not built', () => {
  let app: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-panel-'));
    app = await startTestApp({ env: { AERIE_PANEL_DIR: path.join(dir, 'web') } });
  });
  afterAll(async () => {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('starts, and says at / that the panel must be built', async () => {
    const res = await app.http.inject({ method: 'GET', url: '/', headers: HTML });
    expect(res.statusCode).toBe(503);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json<{ errors: { code: string; status: string; detail: string }[] }>();
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0]).toMatchObject({ code: 'ServiceUnavailableHttpException', status: '503' });
    expect(body.errors[0]!.detail).toContain('npm run build');
    expect(body.errors[0]!.detail).toContain(path.join(dir, 'web', 'index.html'));
    // The API is unaffected.
    expect((await app.http.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    expectJson404(await app.http.inject({ method: 'GET', url: '/assets/app-AbC123.js' }));
  });
});
