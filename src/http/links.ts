import net from 'node:net';

/**
 * Every absolute link Aerie hands out (pagination, signed downloads) is built here, so that none
 * can be pointed elsewhere by a request: it is rooted on AERIE_PUBLIC_URL when that is set (its
 * path prefix kept, for a proxy that serves Aerie under one), else on the request's scheme and
 * Host when the Host is strictly valid, else it is relative (`/path?query`), which a client
 * resolves against the URL it asked.
 */

/** What a request's links are rooted on: the deployment's public URL, or the request's own. */
export interface LinkBase {
  /** AERIE_PUBLIC_URL (origin and optional path prefix), or null. */
  publicUrl: string | null;
  /** The request's scheme and Host (or X-Forwarded-* from a trusted proxy), as received. */
  protocol: string | undefined;
  host: string | undefined;
}

/** What a listing's `links` are built from: the link base and the request target. */
export interface LinkSource extends LinkBase {
  /** The request target as received: `/path?query`, or absolute-form `http://host/path?query`. */
  target: string;
}

/** Builds the URL of another page of the same listing (relative when the request's Host is unusable). */
export type PageUrl = (page: number) => string;

const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const HOST_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);
const HOST_AND_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/;

/**
 * Whether a Host header names a host, strictly: a DNS name, a dotted-quad IPv4 address or a
 * bracketed IPv6 address, then optionally a port from 1 to 65535. Nothing else (no credentials,
 * paths, percent signs, empty ports) can reach a link.
 */
export function isValidHost(host: string): boolean {
  const match = HOST_AND_PORT.exec(host);
  if (match === null) return false;
  const [, name = '', port] = match;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return false;
  if (name.startsWith('[')) return net.isIPv6(name.slice(1, -1));
  if (name.length > 253 || !HOST_NAME.test(name)) return false;
  // A URL parser reads a host whose last label is a number as an IPv4 address, so such a host
  // must be one (`999.1.1.1` and `panel.123` are not).
  const last = name.slice(name.lastIndexOf('.') + 1);
  return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/i.test(last) ? net.isIPv4(name) : true;
}

/** `scheme://host` of the request when both are sound, else null (links are then relative). */
function requestOrigin(protocol: string | undefined, host: string | undefined): string | null {
  const scheme = protocol?.toLowerCase();
  if ((scheme !== 'http' && scheme !== 'https') || host === undefined || !isValidHost(host)) return null;
  const origin = `${scheme}://${host}`;
  return URL.canParse(origin) ? origin : null;
}

/**
 * The path the router answered and the raw query. An absolute-form target loses its scheme and
 * authority (links never point at a host the client named in the request line), a fragment is
 * dropped, runs of slashes collapse as the router collapses them (so a relative link never
 * starts with `//`), and backslashes stay literal rather than becoming separators.
 */
function splitTarget(target: string): { path: string; query: string } {
  const withoutAuthority = target.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, '');
  const withoutFragment = withoutAuthority.split('#', 1)[0] ?? '';
  const queryAt = withoutFragment.indexOf('?');
  const rawPath = queryAt < 0 ? withoutFragment : withoutFragment.slice(0, queryAt);
  const query = queryAt < 0 ? '' : withoutFragment.slice(queryAt + 1);
  const path = `/${rawPath}`.replace(/\\/g, '%5C').replace(/\/{2,}/g, '/');
  return { path, query };
}

function isPageParameter(segment: string): boolean {
  const name = (segment.split('=', 1)[0] ?? '').replace(/\+/g, ' ');
  try {
    return decodeURIComponent(name) === 'page';
  } catch {
    return false;
  }
}

/** The query with `page` set to `page`: the first `page` replaced in place, any others dropped. */
function withPage(query: string, page: number): string {
  const segments: string[] = [];
  let placed = false;
  for (const segment of query.split('&')) {
    if (segment === '') continue;
    if (!isPageParameter(segment)) segments.push(segment);
    else if (!placed) {
      segments.push(`page=${page}`);
      placed = true;
    }
  }
  if (!placed) segments.push(`page=${page}`);
  return segments.join('&');
}

/** Where links are rooted: AERIE_PUBLIC_URL, else the request's origin when sound, else null. */
function rootOf(base: LinkBase): string | null {
  return base.publicUrl ?? requestOrigin(base.protocol, base.host);
}

/** `path` and the raw `query` under `root`; relative when there is no root. */
function build(root: string | null, path: string, query: string): string {
  const url = new URL(root ?? 'http://relative.invalid');
  url.pathname = url.pathname.replace(/\/$/, '') + path;
  url.search = query;
  return root === null ? url.pathname + url.search : url.href;
}

/**
 * A link to one of Aerie's own paths (`/download/backup?token=…`): on AERIE_PUBLIC_URL when it
 * is set, else on the request's scheme and Host when the Host is a valid one, else relative.
 * Never throws.
 */
export function linkTo(base: LinkBase, pathAndQuery: string): string {
  const { path, query } = splitTarget(pathAndQuery);
  return build(rootOf(base), path, query);
}

/**
 * Links to other pages of the listing a request asked for, rooted as `linkTo` roots them. The
 * rest of the query is kept as sent; the URL serializer percent-encodes anything a URL may not
 * hold. Never throws, whatever the request carried.
 */
export function pageLinks(source: LinkSource): PageUrl {
  const root = rootOf(source);
  const { path, query } = splitTarget(source.target);
  return (page) => build(root, path, withPage(query, page));
}
