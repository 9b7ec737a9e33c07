import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Transport, type MicroserviceOptions } from '@nestjs/microservices';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MasterKeyring } from '@switchboard/crypto';
import { NatsRequester } from '@switchboard/messaging';
import { testInfrastructure } from '@switchboard/testing';
import { Client, Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type WorkflowBundle,
} from '@temporalio/worker';
import * as activities from '../activities';
import { AppModule } from '../app.module';
import { envSchema } from '../config/env';
import { pingWorkflow } from '../workflows';
import { ORCHESTRATOR_SUBJECTS } from '@switchboard/contracts';
import { TemporalHealthCheck } from './temporal.health';

jest.setTimeout(30_000);

describe('sync-orchestrator on Temporal', () => {
  // Each run gets its own task queue, so a worker of another run (or of a running stack) never takes our tasks.
  const taskQueue = `test-ping-${randomUUID()}`;
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
    // Bundled once from the .ts source (the SDK's bundler compiles TypeScript), shared by every worker below.
    [workflowBundle, nativeConnection, connection] = await Promise.all([
      bundleWorkflowCode({
        workflowsPath: require.resolve('../workflows'),
        logger: new DefaultLogger('WARN'),
      }),
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

  /** An in-process worker on this run's task queue, for as long as `work` takes. */
  async function withWorker<T>(work: () => Promise<T>): Promise<T> {
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowBundle,
      activities,
    });
    return worker.runUntil(work());
  }

  it('runs pingWorkflow through the greet activity', async () => {
    const greeting = await withWorker(() =>
      client.workflow.execute(pingWorkflow, {
        taskQueue,
        workflowId: `ping-${randomUUID()}`,
        args: [{ name: 'Ada' }],
      }),
    );
    expect(greeting).toBe('Hello, Ada!');
  });

  it(`answers ${ORCHESTRATOR_SUBJECTS.pingRun} over NATS with the workflow's result`, async () => {
    const requester = app.get(NatsRequester);
    const reply = await withWorker(() =>
      requester.request<{ greeting: string; workflowId: string }>(ORCHESTRATOR_SUBJECTS.pingRun, {
        name: 'Grace',
      }),
    );
    expect(reply.greeting).toBe('Hello, Grace!');
    // The run is a real workflow execution the operator can look up in Temporal.
    const described = await client.workflow.getHandle(reply.workflowId).describe();
    expect(described.status.name).toBe('COMPLETED');
    expect(described.taskQueue).toBe(taskQueue);
  });

  it('rejects a ping without a name as invalid_body', async () => {
    await expect(app.get(NatsRequester).request(ORCHESTRATOR_SUBJECTS.pingRun, {})).rejects.toMatchObject({
      code: 'invalid_body',
    });
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
