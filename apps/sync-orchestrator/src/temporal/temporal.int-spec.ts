import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Transport, type MicroserviceOptions } from '@nestjs/microservices';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MasterKeyring } from '@switchboard/crypto';
import { testInfrastructure } from '@switchboard/testing';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import { AppModule } from '../app.module';
import { envSchema } from '../config/env';
import { TemporalHealthCheck } from './temporal.health';
import { currentWorkflowBundle } from '../../test/workflows/current-bundle';

jest.setTimeout(30_000);

describe('sync-orchestrator on Temporal', () => {
  // Each run gets its own task queue, so a worker of another run (or of a running stack) is never counted.
  const taskQueue = `test-temporal-${randomUUID()}`;
  let temporalAddress: string;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let client: Client;
  let workflowBundle: WorkflowBundle;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    const infra = await testInfrastructure();
    temporalAddress = infra.temporalAddress;
    Runtime.install({ logger: new DefaultLogger('WARN') });
    // The build's bundle, or the sources bundled now when they changed since the build.
    [workflowBundle, nativeConnection, connection] = await Promise.all([
      currentWorkflowBundle(),
      NativeConnection.connect({ address: temporalAddress }),
      Connection.connect({ address: temporalAddress }),
    ]);
    client = new Client({ connection });

    const env = envSchema.parse({
      NATS_URL: infra.natsUrl,
      DATABASE_URL: infra.databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SWITCHBOARD_MASTER_KEYS: `1:${MasterKeyring.generateKeyMaterial()}`,
    });
    app = await NestFactory.create(AppModule.forRoot(env), new FastifyAdapter(), { logger: ['error'] });
    app.connectMicroservice<MicroserviceOptions>({
      transport: Transport.NATS,
      options: { servers: [infra.natsUrl], queue: 'sync-orchestrator' },
    });
    await app.startAllMicroservices();
    await app.listen(0, '127.0.0.1');
    baseUrl = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
    await connection?.close();
    await nativeConnection?.close();
  });

  it("builds a worker from the service's workflows that polls its task queue", async () => {
    // What `temporal-worker.ts` does with the build's bundle: `workflows/` bundled for the sandbox (a forbidden
    // import fails here) and a worker polling TEMPORAL_TASK_QUEUE, which Temporal then lists among the
    // queue's pollers.
    const worker = await Worker.create({ connection: nativeConnection, taskQueue, workflowBundle });
    const identities = await worker.runUntil(async () => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        const { pollers } = await client.workflowService.describeTaskQueue({
          namespace: 'default',
          taskQueue: { name: taskQueue },
          taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
        });
        if (pollers.length > 0) return pollers.map((p) => p.identity);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return [];
    });
    expect(identities).toEqual([worker.options.identity]);
  });

  it('reports Temporal as ready on /ready', async () => {
    const res = await fetch(`${baseUrl}/ready`);
    const report = (await res.json()) as { status: string; checks: { name: string; ok: boolean }[] };
    expect(res.status).toBe(200);
    expect(report.checks).toContainEqual({ name: 'temporal', ok: true });
  });

  describe('temporal health check', () => {
    it('is ok against the running server', async () => {
      const probe = new TemporalHealthCheck({ address: temporalAddress });
      try {
        await expect(probe.check()).resolves.toEqual({ ok: true });
      } finally {
        await probe.close();
      }
    });

    it('is not ok, with the reason, when nothing listens at the address', async () => {
      const probe = new TemporalHealthCheck({ address: '127.0.0.1:1' }, 1000);
      try {
        const started = Date.now();
        const result = await probe.check();
        expect(result.ok).toBe(false);
        expect(result.detail).toMatch(/UNAVAILABLE|DEADLINE_EXCEEDED/);
        // Answers within its own deadline, inside the readiness registry's 2 s budget.
        expect(Date.now() - started).toBeLessThan(1500);
      } finally {
        await probe.close();
      }
    });
  });
});
