import { environmentCaller, SwitchboardError, type Caller } from '@switchboard/contracts';
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
    return await environmentCaller(nats, { id: environmentId });
  } catch (error) {
    if (error instanceof SwitchboardError && ['unknown_environment', 'not_found'].includes(error.code)) {
      return undefined;
    }
    throw error;
  }
}
