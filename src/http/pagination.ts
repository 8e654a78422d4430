import { Type, type Static } from '@sinclair/typebox';

export const PaginationSchema = Type.Object({
  total: Type.Integer(),
  count: Type.Integer(),
  per_page: Type.Integer(),
  current_page: Type.Integer(),
  total_pages: Type.Integer(),
  links: Type.Object({ previous: Type.Optional(Type.String()), next: Type.Optional(Type.String()) }),
});
export type Pagination = Static<typeof PaginationSchema>;

/** The `per_page` and `page` query parameters of a listing, with its own default and maximum. */
export function pageQuery(perPage: { default: number; maximum: number }) {
  return {
    per_page: Type.Integer({ minimum: 1, maximum: perPage.maximum, default: perPage.default }),
    page: Type.Integer({ minimum: 1, maximum: 2147483647, default: 1 }),
  };
}

/** Builds the URL of another page of the same listing (relative when the request's Host is unusable). */
export type PageUrl = (page: number) => string;

/**
 * `total_pages` is at least 1, as the reference panel counts it; a page past the end has no
 * items but the true totals, and links back to the last page.
 */
export function paginate(
  total: number,
  count: number,
  perPage: number,
  page: number,
  pageUrl?: PageUrl,
): Pagination {
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  const links: Pagination['links'] = {};
  if (pageUrl !== undefined) {
    if (page > 1) links.previous = pageUrl(Math.min(page - 1, totalPages));
    if (page < totalPages) links.next = pageUrl(page + 1);
  }
  return { total, count, per_page: perPage, current_page: page, total_pages: totalPages, links };
}

export function offsetOf(page: number, perPage: number): number {
  return (page - 1) * perPage;
}
