import { Injectable } from '@nestjs/common';
import {
  SwitchboardError,
  type Caller,
  type Integration,
  INTEGRATION_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';

/** Integrations belong to auth-connect: asked, never cached, so a just-created one is seen at once. */
@Injectable()
export class IntegrationDirectory {
  constructor(private readonly nats: NatsRequester) {}

  /** The integration's provider, or undefined when the environment has no integration with this key. */
  async providerOf(caller: Caller, uniqueKey: string): Promise<string | undefined> {
    try {
      const integration = await this.nats.call(INTEGRATION_REQUESTS.get, {
        caller,
        uniqueKey,
        include: { webhook: false, credentials: false },
      });
      return integration.provider;
    } catch (error) {
      if (error instanceof SwitchboardError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  async list(caller: Caller): Promise<Integration[]> {
    return this.nats.call(INTEGRATION_REQUESTS.list, { caller });
  }

  /** Throws Nango's `not_found` when the integration does not exist in the caller's environment. */
  async require(caller: Caller, uniqueKey: string): Promise<string> {
    const provider = await this.providerOf(caller, uniqueKey);
    if (!provider) throw new SwitchboardError('not_found', `Integration "${uniqueKey}" not found`);
    return provider;
  }
}
