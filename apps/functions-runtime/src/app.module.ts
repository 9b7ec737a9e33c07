import { Module, type DynamicModule } from '@nestjs/common';
import { ServiceKitModule } from '@switchboard/service-kit';
import { FUNCTIONS_RUNTIME_ENV, type FunctionsRuntimeEnv } from './config/env';
import { HostCalls } from './host/host-calls';
import { ProxyClient } from './host/proxy-client';
import { UncontrolledFetch } from './host/uncontrolled-fetch';
import { BundleCache } from './runs/bundle-cache';
import { OutputStore } from './runs/output-store';
import { RunCancellations } from './runs/run-cancellations';
import { RunsHandlers } from './runs/runs.handlers';
import { RunsService } from './runs/runs.service';

@Module({})
export class AppModule {
  static forRoot(env: FunctionsRuntimeEnv): DynamicModule {
    return {
      module: AppModule,
      imports: [ServiceKitModule.forRoot({ name: 'functions-runtime', nats: env })],
      controllers: [RunsHandlers],
      providers: [
        { provide: FUNCTIONS_RUNTIME_ENV, useValue: env },
        ProxyClient,
        UncontrolledFetch,
        HostCalls,
        OutputStore,
        BundleCache,
        RunCancellations,
        RunsService,
      ],
    };
  }
}
