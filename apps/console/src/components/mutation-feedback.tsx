import { ErrorAlert } from './error-alert';

/** A failed write shows the API's message where the user acted. */
export function MutationError({
  mutation,
  title,
}: {
  mutation: { isError: boolean; error: Error | null };
  title?: string;
}) {
  return mutation.isError ? (
    <ErrorAlert error={mutation.error} title={title ?? 'The change was refused'} />
  ) : null;
}
