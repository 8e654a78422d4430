import type { Pagination as PaginationMeta } from '../api/types.ts';
import { Link } from '../router.tsx';

interface PaginationProps {
  meta: PaginationMeta;
  /** The address of a page, keeping everything else in the URL. */
  hrefFor: (page: number) => string;
  noun: string;
}

export function Pagination({ meta, hrefFor, noun }: PaginationProps) {
  const { current_page: page, total_pages: pages, total } = meta;
  return (
    <nav className="pagination" aria-label={`Pages of ${noun}`}>
      {page > 1 ? (
        <Link to={hrefFor(page - 1)} rel="prev">
          ← Previous
        </Link>
      ) : (
        <span className="disabled" aria-hidden="true">
          ← Previous
        </span>
      )}
      <span className="page-status">
        Page {page} of {pages} · {total} {noun}
      </span>
      {page < pages ? (
        <Link to={hrefFor(page + 1)} rel="next">
          Next →
        </Link>
      ) : (
        <span className="disabled" aria-hidden="true">
          Next →
        </span>
      )}
    </nav>
  );
}
