import { Module } from '@nestjs/common';
import { ConsoleHandlers } from './console.handlers';
import { ConsoleService } from './console.service';

@Module({ controllers: [ConsoleHandlers], providers: [ConsoleService] })
export class ConsoleModule {}
