import { isGrpcServiceError, NamespaceNotFoundError, ServiceError } from '@temporalio/client';
import { OrchestratorError } from '../sync-orchestrator.errors';

/**
 * Temporal unreachable, too slow (each schedule operation has a deadline) or without this service's
 * namespace (a Temporal still starting, or one being restored, answers NamespaceNotFound, which the SDK
 * throws as a plain Error) is `service_unavailable` for the caller, safe to retry, not a bare 500.
 */
export async function withTemporal<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (temporalUnavailable(error))
      throw new OrchestratorError('service_unavailable', 'Temporal is not reachable');
    throw error;
  }
}

/** Whether `error` says Temporal could not answer (unreachable, past the deadline, namespace missing). */
export function temporalUnavailable(error: unknown): boolean {
  return (
    error instanceof ServiceError || error instanceof NamespaceNotFoundError || isGrpcServiceError(error)
  );
}
