import { Module } from '@nestjs/common';
import { ApiKeysHandlers } from './api-keys.handlers';
import { ApiKeysService } from './api-keys.service';

@Module({ controllers: [ApiKeysHandlers], providers: [ApiKeysService] })
export class ApiKeysModule {}
