import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type {
  AuthEvent,
  Caller,
  IntegrationEvent,
  OnEventReply,
  ValidateConnectionRequest,
} from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { DeployedFunctionsCache } from '../functions/deployed-functions-cache';
import { ActionsService } from '../actions/actions.service';
import { FunctionInvocationRunner, type InvocationError } from '../functions/function-invocation-runner';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { callerOfEnvironment } from '../functions/environment-caller';
import { IntegrationDirectory } from '../functions/integration-directory';

/** Attempts of a post-connection-creation script (nobody waits for it, so it may try again). */
const POST_CREATION_RETRIES = 2;

/** A stable UUID for one script run caused by one event, so a redelivered event starts nothing twice. */
export function invocationIdFor(eventId: string, functionId: number): string {
  const hex = createHash('sha256').update(`${eventId}\u0000${functionId}`).digest('hex');
  // RFC 9562 layout: version 5 (name-based), variant 10xx.
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The end user's reason when a validate-connection script refuses, as Nango words it: the `message` (or
 * `error`) of the script's `ActionError` payload; otherwise the script's own error message.
 */
export function refusalMessage(error: InvocationError): string {
  const payload = error.payload as Record<string, unknown> | null | undefined;
  if (payload && typeof payload === 'object') {
    if (typeof payload.message === 'string' && payload.message) return payload.message;
    if (typeof payload.error === 'string' && payload.error) return payload.error;
  }
  if (error.code === 'action_script_runtime_error' || !error.message) return 'Connection failed validation';
  return error.message;
}

/**
 * On-event scripts. `post-connection-creation` runs in the background (a Temporal workflow per script,
 * started from the auth event). `validate-connection` and `pre-connection-deletion` run while their
 * caller waits (auth-connect before it stores a connection, the vault before it stores an imported one or
 * deletes one), straight on functions-runtime, all scripts of the event together within SWITCHBOARD_ON_EVENT_TIMEOUT_MS.
 */
@Injectable()
export class OnEventService {
  private readonly logger = new Logger('OnEvents');

  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly actions: ActionsService,
    private readonly runner: FunctionInvocationRunner,
    private readonly integrations: IntegrationDirectory,
    private readonly nats: NatsRequester,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
    private readonly lookups: DeployedFunctionsCache,
  ) {}

  /** A connection was created: start its integration's post-connection-creation scripts. */
  async connectionCreated(event: AuthEvent): Promise<number> {
    const scripts = await this.actions.onEventScripts(
      event.environmentId,
      event.providerConfigKey,
      'post-connection-creation',
    );
    if (scripts.length === 0) return 0;
    const caller = await callerOfEnvironment(this.nats, event.environmentId);
    if (!caller) return 0; // the environment is gone: nothing to run for
    let started = 0;
    for (const fn of scripts) {
      const fresh = await this.actions.startOnce(fn, {
        invocationId: invocationIdFor(event.id, fn.id),
        caller,
        provider: event.provider,
        connectionId: event.connectionId,
        providerConfigKey: event.providerConfigKey,
        event: 'post-connection-creation',
        maxRetries: POST_CREATION_RETRIES,
        wallTimeMs: this.env.SWITCHBOARD_ACTION_TIMEOUT_MS,
        notify: false,
      });
      if (fresh) started += 1;
    }
    return started;
  }

  /**
   * A connection is about to be stored: its integration's validate-connection scripts run, one after the
   * other, with the candidate credentials (the vault does not hold them yet), and the first that throws
   * refuses it. The runs share one budget: the caller waits for the verdict, not for each script.
   */
  async validate(request: ValidateConnectionRequest): Promise<OnEventReply> {
    const { caller } = request;
    const scripts = await this.actions.onEventScripts(
      caller.environmentId,
      request.providerConfigKey,
      'validate-connection',
    );
    if (scripts.length === 0) return { ok: true, ran: 0 };
    const deadline = Date.now() + this.env.SWITCHBOARD_ON_EVENT_TIMEOUT_MS;
    let ran = 0;
    for (const fn of scripts) {
      const invocationId = await this.actions.createInvocation(fn, caller, request.connectionId, {
        async: false,
        maxRetries: 0,
      });
      ran += 1;
      const left = deadline - Date.now();
      const outcome = await this.runner.attempt({
        invocationId,
        caller,
        provider: request.provider,
        attempt: 1,
        event: 'validate-connection',
        candidate: request.candidate,
        // Under the runtime's own floor the run would be refused; a budget spent is a timeout all the same.
        wallTimeMs: Math.max(left, 100),
        final: true,
      });
      if (outcome.status === 'failed') {
        this.logger.log(
          `validate-connection script ${fn.name} refused a ${request.operation} of ${request.providerConfigKey} (run ${invocationId}, ${outcome.error.code})`,
        );
        return { ok: false, ran, message: refusalMessage(outcome.error).slice(0, 1000) };
      }
    }
    return { ok: true, ran };
  }

  /**
   * A connection is about to be deleted: run the pre-connection-deletion scripts now, while it still
   * exists. Their outcome is reported, never enforced here: the vault deletes whatever they answer.
   */
  async beforeDeletion(
    caller: Caller,
    providerConfigKey: string,
    connectionId: string,
  ): Promise<OnEventReply> {
    const scripts = await this.actions.onEventScripts(
      caller.environmentId,
      providerConfigKey,
      'pre-connection-deletion',
    );
    if (scripts.length === 0) return { ok: true, ran: 0 };
    const provider = await this.integrations.providerOf(caller, providerConfigKey);
    if (!provider) return { ok: true, ran: 0 };
    const failures: string[] = [];
    for (const fn of scripts) {
      const invocationId = await this.actions.createInvocation(fn, caller, connectionId, {
        async: false,
        maxRetries: 0,
      });
      const outcome = await this.runner.attempt({
        invocationId,
        caller,
        provider,
        attempt: 1,
        event: 'pre-connection-deletion',
        wallTimeMs: this.env.SWITCHBOARD_ON_EVENT_TIMEOUT_MS,
        final: true,
      });
      if (outcome.status === 'failed') {
        failures.push(`${fn.name}: ${outcome.error.message}`);
        this.logger.warn(
          `pre-connection-deletion script ${fn.name} failed for a connection of ${providerConfigKey} (run ${invocationId})`,
        );
      }
    }
    return failures.length > 0
      ? { ok: false, ran: scripts.length, message: failures.join('; ').slice(0, 1000) }
      : { ok: true, ran: scripts.length };
  }

  /**
   * An integration was deleted: its functions go with it (their versions stay, unlinked, for the runs
   * that pinned them). Functions deployed after the deletion belong to a new integration of the same
   * key, and are kept.
   */
  async integrationDeleted(event: IntegrationEvent): Promise<number> {
    const { count } = await this.db.deployedFunction.deleteMany({
      where: {
        environmentId: event.environmentId,
        providerConfigKey: event.providerConfigKey,
        lastDeployedAt: { lte: new Date(event.occurredAt) },
      },
    });
    this.lookups.functionsChanged(event.environmentId);
    if (count > 0) {
      this.logger.log(`deleted ${count} function(s) of the deleted integration ${event.providerConfigKey}`);
    }
    return count;
  }
}
