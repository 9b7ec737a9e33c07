import { Center, Loader, Text, VisuallyHidden } from '@mantine/core';
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { ErrorAlert } from './error-alert';

/** Loading, error and empty states of a list, the same on every page. */
export function QueryState<T>({
  query,
  isEmpty,
  empty,
  label,
  children,
}: {
  query: UseQueryResult<T>;
  isEmpty?: (data: T) => boolean;
  empty: string;
  label: string;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) {
    return (
      <Center py="lg" role="status" aria-live="polite">
        <Loader size="sm" />
        <VisuallyHidden>Loading {label}</VisuallyHidden>
      </Center>
    );
  }
  if (query.isError) return <ErrorAlert error={query.error} title={`Could not load ${label}`} />;
  if (isEmpty?.(query.data)) {
    return (
      <Text c="dimmed" py="md" data-testid="empty-state">
        {empty}
      </Text>
    );
  }
  return <>{children(query.data)}</>;
}
