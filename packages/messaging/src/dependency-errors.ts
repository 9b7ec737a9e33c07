/**
 * Errors that say a dependency (Postgres, through Prisma or node-postgres) is briefly out of reach, not
 * that the request is wrong or the code broken: the request did nothing it could half-do (a transaction
 * that lost its connection is rolled back by Postgres), so its caller is told to try again
 * (`service_unavailable`, 503 with Retry-After at the gateway) instead of getting a bare `server_error`.
 */

/** Prisma's codes for "the database is not reachable / went away / has no connection to give". */
const PRISMA_UNAVAILABLE = new Set([
  'P1001', // Can't reach database server
  'P1002', // The database server was reached but timed out
  'P1008', // Operations timed out
  'P1017', // Server has closed the connection
  'P2024', // Timed out fetching a new connection from the connection pool
]);

/** The Prisma driver adapter's kinds (@prisma/adapter-pg) for the same. */
const ADAPTER_UNAVAILABLE = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
]);

/** Node's socket errors on the way to the database. */
const SOCKET_UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * Postgres's SQLSTATEs for the same: class 08 (connection exception), 57P01-57P03 (the server shutting
 * down or starting), 53300 (too many connections).
 */
const SQLSTATE_UNAVAILABLE = /^(08...|57P0[123]|53300)$/;

/** node-postgres's and Prisma's messages when the socket went away without a code. */
const MESSAGE_UNAVAILABLE =
  /Can't reach database server|Connection terminated|Server has closed the connection|Timed out fetching a new connection|timeout exceeded when trying to connect|Client has encountered a connection error/i;

/** Whether `error` (or an error it wraps, as `cause`) says the database is briefly out of reach. */
export function isDependencyUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== null && typeof current === 'object'; depth++) {
    const e = current as {
      code?: unknown;
      errorCode?: unknown;
      kind?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (typeof e.code === 'string') {
      if (
        PRISMA_UNAVAILABLE.has(e.code) ||
        SOCKET_UNAVAILABLE.has(e.code) ||
        SQLSTATE_UNAVAILABLE.test(e.code)
      )
        return true;
    }
    if (typeof e.errorCode === 'string' && PRISMA_UNAVAILABLE.has(e.errorCode)) return true;
    if (typeof e.kind === 'string' && ADAPTER_UNAVAILABLE.has(e.kind)) return true;
    if (typeof e.message === 'string' && MESSAGE_UNAVAILABLE.test(e.message)) return true;
    current = e.cause;
  }
  return false;
}
