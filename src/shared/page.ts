import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';

/** One page of a listing, as a service returns it; the HTTP layer makes the wire envelope. */
export interface Page<T> {
  items: T[];
  /** How many items the whole listing has (exact, also on a page past the end). */
  total: number;
  page: number;
  perPage: number;
}

/** Which page of a listing is wanted (validated query parameters). */
export interface PageRequest {
  page: number;
  per_page: number;
}

/**
 * Counts the listing, then reads the requested page of it; a page past the end is read as
 * empty without asking the database, and still carries the true total.
 */
export async function loadPage<T>(
  request: PageRequest,
  count: () => Promise<number>,
  read: (window: { limit: number; offset: number }) => Promise<T[]>,
): Promise<Page<T>> {
  const total = await count();
  const offset = (request.page - 1) * request.per_page;
  const items = offset >= total ? [] : await read({ limit: request.per_page, offset });
  return { items, total, page: request.page, perPage: request.per_page };
}

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

/** The schema of a paginated listing of `item`: `{object: "list", data, meta: {pagination, …meta}}`. */
export function pagedListSchema<T extends TSchema, M extends TProperties = Record<never, never>>(
  item: T,
  meta?: M,
) {
  return Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    meta: Type.Object({ pagination: PaginationSchema, ...(meta ?? ({} as M)) }),
  });
}

/** The schema of a listing that is never paginated: `{object: "list", data}`. */
export function listSchema<T extends TSchema>(item: T) {
  return Type.Object({ object: Type.Literal('list'), data: Type.Array(item) });
}
