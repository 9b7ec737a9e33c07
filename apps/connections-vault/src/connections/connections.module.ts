import { Module } from '@nestjs/common';
import { CredentialsCipher } from '../credentials/credentials-cipher';
import { SecretConfigFields } from '../credentials/secret-config';
import { ConnectionChanges } from '../events/connection-changes';
import { OutboxPublisher } from '../events/outbox';
import { RefreshCoordinator } from '../refresh/refresh-coordinator';
import { ConnectionsApiHandlers } from './connections-api.handlers';
import { ConnectionsHandlers } from './connections.handlers';
import { ConnectionsRepository } from './connections.repository';
import { AcceptConnection } from './use-cases/accept-connection';
import { ImportConnection } from './use-cases/import-connection';
import { ReadConnection } from './use-cases/read-connection';
import { StoreConnection } from './use-cases/store-connection';

@Module({
  controllers: [ConnectionsHandlers, ConnectionsApiHandlers],
  providers: [
    ConnectionChanges,
    ConnectionsRepository,
    CredentialsCipher,
    SecretConfigFields,
    OutboxPublisher,
    RefreshCoordinator,
    StoreConnection,
    AcceptConnection,
    ReadConnection,
    ImportConnection,
  ],
})
export class ConnectionsModule {}
