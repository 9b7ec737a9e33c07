/**
 * A host call's refusal or failure, as the script sees it: an Error with this `code`. A script that does
 * not catch it ends with `script_forbidden_call` (for the runtime's own refusals) or `script_runtime_error`
 * with `cause.code` (for everything else: `egress_refused`, `unknown_connection`, ...).
 */
export class HostCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HostCallError';
  }
}
