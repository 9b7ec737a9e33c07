import { Module } from '@nestjs/common';
import { EnvironmentsHandlers } from './environments.handlers';

@Module({ controllers: [EnvironmentsHandlers] })
export class EnvironmentsModule {}
