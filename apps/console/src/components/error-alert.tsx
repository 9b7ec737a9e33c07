import { Alert, Anchor, Text } from '@mantine/core';
import { ApiError } from '../api/client';
import { useSession } from '../api/session';

/** The API's own message (and code), with a link to the trace when a trace UI is configured. */
export function ErrorAlert({ error, title = 'Something went wrong' }: { error: unknown; title?: string }) {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError ? error.code : null;
  const traceId = error instanceof ApiError ? error.traceId : null;
  return (
    <Alert color="red" title={title} role="alert" variant="light">
      <Text size="sm">{message}</Text>
      {code && (
        <Text size="xs" c="dimmed">
          Code: {code}
        </Text>
      )}
      {traceId && <TraceLink traceId={traceId} />}
    </Alert>
  );
}

export function TraceLink({ traceId }: { traceId: string | null | undefined }) {
  const { traceUrl } = useSession();
  if (!traceUrl || !traceId) return null;
  return (
    <Anchor
      size="xs"
      href={traceUrl.replace('{trace_id}', encodeURIComponent(traceId))}
      target="_blank"
      rel="noreferrer"
    >
      View trace {traceId.slice(0, 8)}
    </Anchor>
  );
}
