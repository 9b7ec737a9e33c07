import { Injectable } from '@nestjs/common';
import { SwitchboardError, type ResolvedEnvironment, ENVIRONMENT_REQUESTS } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';

const TTL_MS = 60_000;

/**
 * Environments belong to auth-connect; the relay needs an id for a public UUID (ingress) and a name for
 * an id (auth payloads). Both change rarely, so answers are kept for a minute, and an unknown environment
 * is not cached (it may be created a moment later).
 */
@Injectable()
export class EnvironmentDirectory {
  private readonly byId = new Map<number, { value: ResolvedEnvironment; until: number }>();
  private readonly byUuid = new Map<string, { value: ResolvedEnvironment; until: number }>();

  constructor(private readonly nats: NatsRequester) {}

  async byEnvironmentId(id: number): Promise<ResolvedEnvironment | undefined> {
    const cached = this.byId.get(id);
    if (cached && cached.until > Date.now()) return cached.value;
    return this.fetch({ id });
  }

  async byEnvironmentUuid(uuid: string): Promise<ResolvedEnvironment | undefined> {
    const cached = this.byUuid.get(uuid);
    if (cached && cached.until > Date.now()) return cached.value;
    return this.fetch({ uuid });
  }

  private async fetch(request: { id: number } | { uuid: string }): Promise<ResolvedEnvironment | undefined> {
    try {
      const value = await this.nats.call(ENVIRONMENT_REQUESTS.resolve, request);
      const until = Date.now() + TTL_MS;
      this.byId.set(value.id, { value, until });
      this.byUuid.set(value.uuid, { value, until });
      return value;
    } catch (error) {
      if (
        error instanceof SwitchboardError &&
        (error.code === 'unknown_environment' || error.code === 'not_found')
      ) {
        return undefined;
      }
      throw error;
    }
  }
}
