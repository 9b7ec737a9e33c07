import { Button, Group, Text } from '@mantine/core';

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
