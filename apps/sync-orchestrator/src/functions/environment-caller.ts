import { SwitchboardError, type Caller, ENVIRONMENT_REQUESTS } from '@switchboard/contracts';
import type { NatsRequester } from '@switchboard/messaging';

/**
 * The caller a background run acts as (an on-event script, a scheduled sync): its environment, asked of
 * auth-connect. Undefined when the environment is gone, which leaves nothing to run for.
 */
export async function callerOfEnvironment(
  nats: NatsRequester,
  environmentId: number,
): Promise<Caller | undefined> {
  try {
    const env = await nats.call(ENVIRONMENT_REQUESTS.resolve, { id: environmentId });
    return {
      accountId: env.accountId,
      environmentId: env.id,
      environmentUuid: env.uuid,
      environmentName: env.name,
    };
  } catch (error) {
    if (error instanceof SwitchboardError && ['unknown_environment', 'not_found'].includes(error.code)) {
      return undefined;
    }
    throw error;
  }
}
