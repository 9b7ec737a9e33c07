import { Injectable } from '@nestjs/common';
import type { Credentials } from '@switchboard/contracts';
import { RefreshCoordinator } from '../../refresh/refresh-coordinator';
import type { RefreshAsk } from '../../refresh/refresh-policy';
import { ConnectionsRepository, type ConnectionKey, type ConnectionRow } from '../connections.repository';

/**
 * Reads one connection; with credentials, they are refreshed first when they expire soon (or the caller
 * forces it). Every read records `last_fetched_at`, as Nango does.
 */
@Injectable()
export class ReadConnection {
  constructor(
    private readonly repository: ConnectionsRepository,
    private readonly refresh: RefreshCoordinator,
  ) {}

  async execute(
    key: ConnectionKey,
    withCredentials: boolean,
    ask: RefreshAsk,
  ): Promise<{ row: ConnectionRow; credentials?: Credentials } | null> {
    const row = await this.repository.findByKey(key);
    if (!row) return null;
    const result: { row: ConnectionRow; credentials?: Credentials } = withCredentials
      ? await this.refresh.fresh(row, ask)
      : { row };
    await this.repository.touchFetched(row.id);
    return { ...result, row: { ...result.row, lastFetchedAt: new Date() } };
  }
}
