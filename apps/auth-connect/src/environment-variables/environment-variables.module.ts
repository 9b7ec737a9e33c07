import { Module } from '@nestjs/common';
import { EnvironmentVariablesHandlers } from './environment-variables.handlers';
import { EnvironmentVariablesService } from './environment-variables.service';

@Module({ controllers: [EnvironmentVariablesHandlers], providers: [EnvironmentVariablesService] })
export class EnvironmentVariablesModule {}
