import type { FastifyRequest } from 'fastify';
import type { Page, Pagination } from '../shared/page.ts';
import type { PageUrl } from './links.ts';
import { pageUrlOf } from './request-context.ts';

/**
 * `total_pages` is at least 1, as the reference panel counts it; a page past the end has no
 * items but the true totals, and links back to the last page.
 */
export function paginate(page: Page<unknown>, pageUrl?: PageUrl): Pagination {
  const totalPages = Math.max(1, Math.ceil(page.total / page.perPage));
  const links: Pagination['links'] = {};
  if (pageUrl !== undefined) {
    if (page.page > 1) links.previous = pageUrl(Math.min(page.page - 1, totalPages));
    if (page.page < totalPages) links.next = pageUrl(page.page + 1);
  }
  return {
    total: page.total,
    count: page.items.length,
    per_page: page.perPage,
    current_page: page.page,
    total_pages: totalPages,
    links,
  };
}

/**
 * The wire shape of every listing: `{object: "list", data, meta: {pagination, …extra}}`, each
 * item made by its resource's transform, links to the neighbouring pages of this request.
 */
export function listEnvelope<T, R, M extends object = object>(
  request: FastifyRequest,
  page: Page<T>,
  transform: (item: T) => R,
  extraMeta?: M,
) {
  return {
    object: 'list' as const,
    data: page.items.map(transform),
    meta: { pagination: paginate(page, pageUrlOf(request)), ...(extraMeta ?? ({} as M)) },
  };
}
