import { Module } from '@nestjs/common';
import { ConsoleHandlers } from './console.handlers';
import { ConsoleOidcService } from './console-oidc.service';
import { ConsoleService } from './console.service';

@Module({ controllers: [ConsoleHandlers], providers: [ConsoleService, ConsoleOidcService] })
export class ConsoleModule {}
