import { ENVIRONMENT_REQUESTS, type Caller } from '@switchboard/contracts';
import type { NatsRequester } from '@switchboard/messaging';

/** The caller of a test stack's environment, as the gateway would send it on a run request. */
export async function stackCaller(nats: NatsRequester, environmentUuid: string): Promise<Caller> {
  const environment = await nats.call(ENVIRONMENT_REQUESTS.resolve, { uuid: environmentUuid });
  return {
    accountId: environment.accountId,
    environmentId: environment.id,
    environmentUuid: environment.uuid,
    environmentName: environment.name,
  };
}
