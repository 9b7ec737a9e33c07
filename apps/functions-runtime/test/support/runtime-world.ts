import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  environmentCaller,
  functionRunResultSchema,
  FUNCTIONS_REQUESTS,
  type Caller,
  type FunctionRunRequest,
  type FunctionRunResult,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { startStack, type Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import {
  startFakePagesProvider,
  writePagesProvidersFile,
  type FakePagesProvider,
} from './fake-pages-provider';

/** The CPU time an action may use, and a sync (which pages through a provider for longer). */
export const CPU_LIMIT_MS = 1500;
export const SYNC_CPU_LIMIT_MS = 6000;
const OUTPUT_LIMIT_BYTES = 2 * 1024 * 1024;
/** Past this size an output travels through the object store rather than in the NATS reply. */
export const INLINE_OUTPUT_BYTES = 64 * 1024;

/** functions-runtime's limits in this stack: small, so that a test meets each of them quickly. */
const RUNTIME_ENV = {
  FUNCTIONS_CPU_LIMIT_MS: String(CPU_LIMIT_MS),
  FUNCTIONS_SYNC_CPU_LIMIT_MS: String(SYNC_CPU_LIMIT_MS),
  FUNCTIONS_MEMORY_LIMIT_MB: '64',
  FUNCTIONS_ACTION_WALL_LIMIT_MS: '20000',
  FUNCTIONS_OUTPUT_LIMIT_BYTES: String(OUTPUT_LIMIT_BYTES),
  FUNCTIONS_INLINE_OUTPUT_BYTES: String(INLINE_OUTPUT_BYTES),
  FUNCTIONS_LOG_LINES_LIMIT: '5',
};

/** A bundle of test/fixtures, as the nango CLI compiled it. */
export const fixture = (name: string) =>
  readFileSync(join(__dirname, '..', 'fixtures', `${name}.cjs`), 'utf8');

/** A hand-written action bundle shaped like the CLI's (CommonJS, zod required, config as the default export). */
export function actionBundle(body: string): string {
  return `"use strict";
var z = require("zod");
var action = {
  type: "action",
  description: "escape attempt",
  input: z.any(),
  output: z.any(),
  exec: async (nango, input) => {
${body}
  }
};
module.exports = { default: action };
`;
}

/** What a run request may say other than its code and input; by default an action on conn-a, first attempt. */
export type RunOptions = Partial<Pick<FunctionRunRequest, 'limits' | 'connection' | 'depth' | 'attempt'>> & {
  type?: FunctionRunRequest['function']['type'];
};

/** A `functions.v1.run` request for `code` as the orchestrator sends it, in the environment of `caller`. */
export function runRequest(
  caller: Caller,
  code: string,
  input: unknown,
  options: RunOptions = {},
): FunctionRunRequest {
  return {
    caller,
    invocationId: randomUUID(),
    function: {
      id: 'fn-1',
      name: 'under-test',
      type: options.type ?? 'action',
      version: '1.0.0',
      codeSha256: createHash('sha256').update(code).digest('hex'),
      code,
    },
    connection: options.connection ?? {
      connectionId: 'conn-a',
      providerConfigKey: 'fake-pages',
      provider: 'fake-pages',
    },
    input,
    attempt: options.attempt ?? 1,
    depth: options.depth ?? 0,
    limits: options.limits ?? {},
  };
}

/**
 * The world of the functions.v1.run spec: a stack with functions-runtime at the limits above, the fake
 * paginated provider behind the `fake-pages` integration, two OAuth connections to it (conn-a and conn-b,
 * each with its own token and an `owner` in its metadata), an environment variable REGION, and NATS to
 * send run requests and leases on.
 */
export class RuntimeWorld {
  stack!: Stack;
  fake!: FakePagesProvider;
  nc!: NatsConnection;
  nats!: NatsRequester;
  caller!: Caller;

  async start(): Promise<void> {
    this.fake = await startFakePagesProvider();
    this.stack = await startStack({
      env: { SWITCHBOARD_PROVIDERS_FILE: writePagesProvidersFile() },
      serviceEnv: {
        // The fake listens on 127.0.0.1; anything else on loopback (127.0.0.2) stays refused.
        proxy: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        'functions-runtime': RUNTIME_ENV,
      },
      readyTimeoutMs: 120_000,
    });
    this.nc = await connect({ servers: this.stack.natsUrl });
    this.nats = new NatsRequester(this.nc);
    this.caller = await environmentCaller(this.nats, { uuid: this.stack.environmentUuid });
    const integration = await this.gateway('POST', '/integrations', {
      provider: 'fake-pages',
      unique_key: 'fake-pages',
      credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' },
    });
    expect(integration.status).toBe(200);
    for (const [connectionId, token] of [
      ['conn-a', 'at-conn-a'],
      ['conn-b', 'at-conn-b'],
    ] as const) {
      const imported = await this.gateway('POST', '/connections', {
        provider_config_key: 'fake-pages',
        connection_id: connectionId,
        credentials: { type: 'OAUTH2', access_token: token },
        connection_config: { origin: this.fake.url },
        metadata: { owner: connectionId },
      });
      expect([200, 201]).toContain(imported.status);
    }
    const variables = await this.gateway('PUT', '/environment-variables', {
      variables: [{ name: 'REGION', value: 'eu-1' }],
    });
    expect(variables.status).toBeLessThan(300);
  }

  async stop(): Promise<void> {
    await this.nc?.drain().catch(() => undefined);
    await this.stack?.stop();
    await this.fake?.close();
  }

  /** A request to the gateway with the environment's secret key; the body parsed as JSON. */
  gateway = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${this.stack.gatewayUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.stack.secretKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
  };

  /** Runs `code` as the orchestrator would and answers the validated result. */
  run = async (code: string, input: unknown, options: RunOptions = {}): Promise<FunctionRunResult> => {
    const reply = await this.nats.call(
      FUNCTIONS_REQUESTS.run,
      runRequest(this.caller, code, input, options),
      {
        timeoutMs: 60_000,
      },
    );
    return functionRunResultSchema.parse(reply);
  };

  /** After any refusal the service must still run a normal script to the end. */
  expectStillServing = async () => {
    const result = await this.run(fixture('sum-numbers'), { numbers: [2, 4], label: 'ok' });
    expect(result).toMatchObject({ status: 'success', output: { label: 'OK', total: 6, mean: 3 } });
  };

  /**
   * Starts a script that waits forever (logging its abort) as attempt `attempt` of invocation `invocationId`,
   * with the extra request fields; answers whether its run has settled yet, and the answer to come.
   */
  runForever = (invocationId: string, attempt: number, extra: Partial<FunctionRunRequest> = {}) => {
    const code = actionBundle(`
      nango.abortSignal.addEventListener("abort", () => console.log("abort: " + nango.abortSignal.reason.message));
      await new Promise(() => {});`);
    const answer = this.nats.call(
      FUNCTIONS_REQUESTS.run,
      { ...runRequest(this.caller, code, {}, { attempt }), invocationId, ...extra },
      { timeoutMs: 60_000 },
    );
    const state = { settled: false, answer };
    void answer.finally(() => (state.settled = true)).catch(() => undefined);
    return state;
  };
}
