import { API_KEY_REQUESTS } from './api-keys';
import { CONNECT_FLOW_REQUESTS, CONNECT_SESSION_REQUESTS } from './connect';
import { CONNECTION_REQUESTS } from './connections';
import { CONNECTIONS_API_REQUESTS } from './connections-api';
import { CONSOLE_OIDC_REQUESTS, CONSOLE_REQUESTS } from './console';
import { ENVIRONMENT_VARIABLE_REQUESTS } from './environment-variables';
import { DEPLOY_REQUESTS } from './function-deploy';
import { FUNCTION_BUNDLE_REQUESTS, FUNCTIONS_REQUESTS } from './functions';
import { FUNCTION_HOST_REQUESTS, FUNCTIONS_API_REQUESTS, ON_EVENT_REQUESTS } from './functions-api';
import { INTEGRATION_REQUESTS } from './integrations';
import { AUTH_INTERNAL_REQUESTS, VAULT_REQUESTS } from './internal-auth';
import { natsSubjectOwner, type NatsRequestDef } from './nats-request';
import { PROVIDER_REQUESTS } from './providers';
import { RECORDS_REQUESTS } from './records';
import { SYNC_REQUESTS } from './syncs';
import { ENVIRONMENT_REQUESTS, SYNC_WEBHOOK_REQUESTS, WEBHOOK_REQUESTS } from './webhooks';
import type { ServiceName } from './health';

/**
 * Every request subject's definition, by the service that answers it. Health subjects (one per service,
 * `healthRequest`) and the records page (a raw reply, `serveRaw`) are not in it.
 */
export const NATS_REQUESTS: readonly NatsRequestDef[] = [
  // auth-connect
  ...Object.values(API_KEY_REQUESTS),
  ...Object.values(AUTH_INTERNAL_REQUESTS),
  ...Object.values(CONNECT_FLOW_REQUESTS),
  ...Object.values(CONNECT_SESSION_REQUESTS),
  ...Object.values(CONSOLE_OIDC_REQUESTS),
  ...Object.values(CONSOLE_REQUESTS),
  ...Object.values(ENVIRONMENT_REQUESTS),
  ...Object.values(ENVIRONMENT_VARIABLE_REQUESTS),
  ...Object.values(INTEGRATION_REQUESTS),
  ...Object.values(PROVIDER_REQUESTS),
  // connections-vault
  ...Object.values(CONNECTION_REQUESTS),
  ...Object.values(CONNECTIONS_API_REQUESTS),
  ...Object.values(VAULT_REQUESTS),
  // functions-runtime
  ...Object.values(FUNCTIONS_REQUESTS),
  // sync-orchestrator
  ...Object.values(DEPLOY_REQUESTS),
  ...Object.values(FUNCTION_BUNDLE_REQUESTS),
  ...Object.values(FUNCTION_HOST_REQUESTS),
  ...Object.values(FUNCTIONS_API_REQUESTS),
  ...Object.values(ON_EVENT_REQUESTS),
  ...Object.values(RECORDS_REQUESTS),
  ...Object.values(SYNC_REQUESTS),
  ...Object.values(SYNC_WEBHOOK_REQUESTS),
  // webhook-relay
  ...Object.values(WEBHOOK_REQUESTS),
];

/** The request definitions a service answers (the owner of each subject's context). */
export const natsRequestsServedBy = (service: ServiceName): NatsRequestDef[] =>
  NATS_REQUESTS.filter((def) => natsSubjectOwner(def.subject) === service);
