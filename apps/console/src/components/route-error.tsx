import { Center } from '@mantine/core';
import { useRouteError } from 'react-router';
import { ErrorAlert } from './error-alert';

/** A page that failed to load or render (a lost chunk after a deploy, a bug): said plainly, not a blank page. */
export function RouteError() {
  const error = useRouteError();
  return (
    <Center p="xl">
      <ErrorAlert
        error={error instanceof Error ? error : new Error('This page could not be shown')}
        title="This page failed"
      />
    </Center>
  );
}
