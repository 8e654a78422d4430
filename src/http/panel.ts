import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { packageRoot } from '../shared/package-root.ts';
import { errorEnvelope } from './envelope.ts';
import { frameworkErrorEnvelope } from './error-handler.ts';

/**
 * The web panel: the single-page app `vite build web` writes into dist/web, served at `/`. It
 * uses the public client API with the session cookie, like any other client; nothing here
 * gives it more.
 */

/** dist/web at the package's root, from the sources and from the build alike. */
export const DEFAULT_PANEL_DIR = path.join(packageRoot(), 'dist/web');

/**
 * The panel's own responses allow only its own files: no inline script or style, nothing from
 * elsewhere, no framing, no plugins, no <base>; images also as data: URLs (the 2FA QR code).
 */
export const PANEL_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': PANEL_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

/** Vite's hashed output: a new build gets new names, so these may be cached for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Paths that are the API's, whatever is asked of them: they keep their JSON answers. */
const API_PATH = /^\/(?:api|auth|health|metrics|download)(?:[/?#]|$)/i;

/** The panel's files other than its page: hashed assets, and the few kept under fixed names. */
const ASSETS_PREFIX = '/assets/';
const FIXED_FILES = ['favicon.svg'];
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/** A request the panel's page answers when no route does: a browser navigating to a panel URL. */
function wantsPanelPage(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (API_PATH.test(request.url) || request.url.startsWith(ASSETS_PREFIX)) return false;
  const accept = request.headers.accept;
  return typeof accept === 'string' && /\btext\/html\b/i.test(accept);
}

function withSecurityHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers(SECURITY_HEADERS);
}

interface PanelPage {
  html: string;
  etag: string;
  mtimeMs: number;
}

/**
 * The panel's page, index.html, read again whenever the file changes: a new build is served
 * without a restart (its assets are looked up per request too).
 */
class IndexPage {
  private cached: PanelPage | null = null;
  constructor(readonly file: string) {}

  async read(): Promise<PanelPage | null> {
    let mtimeMs: number;
    try {
      mtimeMs = (await fs.promises.stat(this.file)).mtimeMs;
    } catch {
      return null;
    }
    if (this.cached?.mtimeMs === mtimeMs) return this.cached;
    try {
      const html = await fs.promises.readFile(this.file, 'utf8');
      const etag = `"${createHash('sha256').update(html).digest('base64url').slice(0, 27)}"`;
      this.cached = { html, etag, mtimeMs };
      return this.cached;
    } catch {
      return null;
    }
  }
}

/**
 * Serves the panel from `dir`: hashed assets cached for a year, its other files revalidated, and
 * its page for `/` and for any other non-API path a browser navigates to (the app routes on the
 * client). Without a build in `dir`, those pages are a 503 that says so, and Aerie still starts.
 */
export async function panelRoutes(app: FastifyInstance, dir: string = DEFAULT_PANEL_DIR): Promise<void> {
  const index = new IndexPage(path.join(dir, 'index.html'));
  if ((await index.read()) === null) {
    app.log.warn({ dir }, 'the web panel is not built (no index.html): its pages answer 503 until it is');
  }

  const sendPage = async (request: FastifyRequest, reply: FastifyReply) => {
    const page = await index.read();
    withSecurityHeaders(reply);
    if (page === null) {
      return reply
        .code(503)
        .header('cache-control', 'no-store')
        .send(
          errorEnvelope(
            503,
            'ServiceUnavailableHttpException',
            `The web panel has not been built: ${index.file} is missing. Run \`npm run build\`.`,
          ),
        );
    }
    reply.header('cache-control', 'no-cache').header('etag', page.etag).type('text/html; charset=utf-8');
    if (request.headers['if-none-match'] === page.etag) return reply.code(304).send();
    return reply.send(page.html);
  };

  await app.register(async (panel) => {
    panel.addHook('onSend', async (_request, reply) => {
      withSecurityHeaders(reply);
    });
    // @fastify/static for its careful file sending (ranges, ETags, conditional requests); the
    // routes are these, so that a file that is not there is the API's 404 like any other path.
    await panel.register(fastifyStatic, {
      root: dir,
      serve: false,
      index: false,
      dotfiles: 'deny',
      cacheControl: false,
      etag: true,
      lastModified: true,
      suppressWarning: true,
    });
    const sendFile = async (reply: FastifyReply, name: string, folder: string, cacheControl: string) => {
      const found = await fs.promises.stat(path.join(folder, name)).then(
        (stat) => stat.isFile(),
        () => false,
      );
      if (!found) return reply.code(404).send(frameworkErrorEnvelope(404));
      return reply.header('cache-control', cacheControl).sendFile(name, folder);
    };
    const assets = path.join(dir, 'assets');
    // Vite writes its assets flat, as name-hash.ext: nothing else is looked for.
    panel.get<{ Params: { file: string } }>(
      `${ASSETS_PREFIX}:file`,
      { schema: { hide: true } },
      (request, reply) =>
        ASSET_NAME.test(request.params.file)
          ? sendFile(reply, request.params.file, assets, IMMUTABLE)
          : reply.code(404).send(frameworkErrorEnvelope(404)),
    );
    for (const file of FIXED_FILES) {
      panel.get(`/${file}`, { schema: { hide: true } }, (_request, reply) =>
        sendFile(reply, file, dir, 'no-cache'),
      );
    }
    panel.get('/', { schema: { hide: true } }, sendPage);
    panel.get('/index.html', { schema: { hide: true } }, sendPage);
  });

  // The client-side routes (/servers/…, /activity?page=2): no server route takes them, so they
  // reach the not-found handler; a browser asking for a page gets the panel instead.
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404 && wantsPanelPage(request)) return sendPage(request, reply);
  });
}
