import type { ErrorCode } from '@switchboard/contracts';

/**
 * The one table from error code to HTTP status. The `never` check makes the build fail when a code is
 * added to the contracts without a status here.
 */
// eslint-disable-next-line max-lines-per-function -- one table from code to status, read whole
export function statusForCode(code: ErrorCode): number {
  switch (code) {
    case 'invalid_json':
    case 'invalid_body':
    case 'invalid_query_params':
    case 'invalid_uri_params':
    case 'invalid_headers':
    case 'integration_not_allowed':
    case 'invalid_auth_mode':
    case 'invalid_connection':
    case 'connection_test_failed':
    case 'refresh_token_external_error':
    case 'invalid_credentials':
    case 'invalid_cli_version':
    case 'invalid_action_input':
    // Sync control: Nango answers all of these with 400.
    case 'missing_provider_config_key':
    case 'no_syncs_found':
    case 'unknown_sync':
    case 'invalid_variant':
    case 'sync_variant_already_exists':
    case 'resource_capped':
    case 'sync_interval_too_short':
    case 'connection_validation_failed':
    case 'invalid_cursor':
      return 400;
    case 'missing_auth_header':
    case 'malformed_auth_header':
    case 'invalid_secret_key_format':
    case 'unknown_account':
    case 'invalid_connect_session_token_format':
    case 'unknown_connect_session_token':
    case 'invalid_signature':
    case 'console_session_required':
      return 401;
    case 'forbidden':
    case 'csrf_token_invalid':
    case 'egress_refused':
      return 403;
    case 'not_found':
    case 'route_not_found':
    case 'unknown_environment':
    // Nango answers these with 400 on a few legacy routes and 404 on the modern ones; one status per
    // code keeps the table honest, and 404 is what the modern routes (auth, proxy, webhooks) use.
    case 'unknown_provider_config':
    case 'unknown_connection':
    case 'unknown_provider_template':
    case 'feature_disabled':
    case 'disabled_resource':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'conflict':
    case 'ambiguous_function':
    // Only a sync script's host calls get it (never the public API); a conflict with the newer run.
    case 'sync_run_superseded':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'invalid_content_type':
      return 415;
    case 'connection_refresh_backoff':
    case 'connection_refresh_exhausted':
      return 424;
    case 'too_many_request':
      return 429;
    case 'server_error':
    // What Nango answers when an action fails: 500, with the script's error in the body.
    case 'action_script_runtime_error':
    case 'action_script_failure':
    case 'script_internal_error':
    case 'invalid_action_output':
    case 'action_output_too_large':
    case 'script_timeout':
      return 500;
    case 'bad_gateway':
      return 502;
    case 'service_unavailable':
    // The runtime replica running the script is gone: the run ended early, another try may succeed.
    case 'function_runtime_lost':
      return 503;
    case 'gateway_timeout':
      return 504;
    default: {
      const unmapped: never = code;
      return unmapped;
    }
  }
}
