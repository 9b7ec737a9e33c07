import { Table } from '@mantine/core';
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Pager } from './pager';
import { QueryState } from './query-state';

/**
 * A server-side page of an API that pages by `next_cursor` (`{ data, next_cursor }`), as a table with
 * its loading, error and empty states and the pager under it; `pages` is `useCursorPages`.
 */
export function PagedTable<T, C>({
  query,
  label,
  empty,
  caption,
  headers,
  row,
  pages,
}: {
  query: UseQueryResult<{ data: T[]; next_cursor: C | null }>;
  label: string;
  empty: string;
  caption: string;
  headers: string[];
  row: (item: T) => ReactNode;
  pages: { page: number; go(next: number, cursor: C | null): void };
}) {
  return (
    <QueryState query={query} label={label} empty={empty} isEmpty={(d) => d.data.length === 0}>
      {(data) => (
        <>
          <Table striped aria-label={caption}>
            <Table.Thead>
              <Table.Tr>
                {headers.map((header) => (
                  <Table.Th key={header}>{header}</Table.Th>
                ))}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>{data.data.map(row)}</Table.Tbody>
          </Table>
          <Pager
            page={pages.page}
            hasMore={data.next_cursor !== null}
            onChange={(next) => pages.go(next, data.next_cursor)}
          />
        </>
      )}
    </QueryState>
  );
}
