import { Button, Group, Text } from '@mantine/core';
import { useState } from 'react';

/**
 * The cursors of the pages seen so far, for an API that pages by `next_cursor`: page `n` is read with the
 * n-th cursor (the first is null); `go` moves one page on with the answer's next cursor, or back to any
 * earlier page; `reset` returns to the first (when a filter changes).
 */
export function useCursorPages<C>() {
  const [cursors, setCursors] = useState<(C | null)[]>([null]);
  const page = cursors.length - 1;
  return {
    page,
    cursor: cursors[page] ?? null,
    reset: () => setCursors([null]),
    go: (next: number, nextCursor: C | null) =>
      setCursors((c) => (next > page ? [...c, nextCursor] : c.slice(0, next + 1))),
  };
}

/** Previous / next over a server-side page (a page number or a stack of cursors). */
export function Pager({
  page,
  hasMore,
  onChange,
}: {
  page: number;
  hasMore: boolean;
  onChange(page: number): void;
}) {
  if (page === 0 && !hasMore) return null;
  return (
    <Group gap="xs" aria-label="Pages" role="navigation">
      <Button size="xs" variant="default" disabled={page === 0} onClick={() => onChange(page - 1)}>
        Previous page
      </Button>
      <Text size="sm">Page {page + 1}</Text>
      <Button size="xs" variant="default" disabled={!hasMore} onClick={() => onChange(page + 1)}>
        Next page
      </Button>
    </Group>
  );
}
