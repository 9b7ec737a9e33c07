import { Global, Module } from '@nestjs/common';
import { ProvidersHandlers } from './providers.handlers';
import { ProvidersService } from './providers.service';

@Global()
@Module({ controllers: [ProvidersHandlers], providers: [ProvidersService], exports: [ProvidersService] })
export class ProvidersModule {}
