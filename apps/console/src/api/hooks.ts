import {
  useMutation,
  useQuery,
  useQueryClient,
  type UseMutationOptions,
  type UseQueryOptions,
} from '@tanstack/react-query';
import { useSession } from './session';

/** A query of the current environment: its cache key carries the environment, so a switch refetches. */
export function useEnvQuery<T>(
  key: readonly unknown[],
  fn: () => Promise<T>,
  options?: Omit<UseQueryOptions<T>, 'queryKey' | 'queryFn'>,
) {
  const { environment } = useSession();
  return useQuery<T>({ queryKey: [environment, ...key], queryFn: fn, ...options });
}

/** A write that, once done, refetches the queries whose keys start with `invalidates`. */
export function useEnvMutation<TVars, TData = unknown>(
  fn: (vars: TVars) => Promise<TData>,
  invalidates: readonly unknown[][],
  options?: Omit<UseMutationOptions<TData, Error, TVars>, 'mutationFn'>,
) {
  const client = useQueryClient();
  const { environment } = useSession();
  return useMutation<TData, Error, TVars>({
    mutationFn: fn,
    ...options,
    onSuccess: async (...args) => {
      await Promise.all(
        invalidates.map((key) => client.invalidateQueries({ queryKey: [environment, ...key] })),
      );
      await options?.onSuccess?.(...args);
    },
  });
}
