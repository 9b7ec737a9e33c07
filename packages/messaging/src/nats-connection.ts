import { natsInboxPrefix } from '@switchboard/contracts';
import { connect, type ConnectionOptions, type NatsConnection } from 'nats';

/** A process's NATS settings: the values of `envFragments.nats` (@switchboard/config). */
export interface NatsSettings {
  NATS_URL: string;
  /** The process's own NATS user (infra/nats/nats.conf); with NATS_PASSWORD, or neither. */
  NATS_USER?: string;
  NATS_PASSWORD?: string;
}

/**
 * The nats.js options every connection of a process uses: its user, and an inbox prefix of its own
 * (`_INBOX.<user>`), the only inbox its user may subscribe to, so no other service can read its replies.
 */
export function natsConnectionOptions(settings: NatsSettings, name: string): ConnectionOptions {
  const { NATS_USER: user, NATS_PASSWORD: pass } = settings;
  if ((user === undefined) !== (pass === undefined)) {
    throw new Error(
      `NATS_USER and NATS_PASSWORD go together: ${user === undefined ? 'NATS_USER' : 'NATS_PASSWORD'} is not set`,
    );
  }
  return {
    servers: settings.NATS_URL.split(','),
    name,
    ...(user !== undefined ? { user, pass, inboxPrefix: natsInboxPrefix(user) } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // nats.js otherwise captures a stack (`new Error()`) on every request, for the rare timeout's message:
    // a measurable share of a request's CPU on the webhook path. Our callers name the subject in errors.
    noAsyncTraces: true,
  };
}

/** The server list as it may appear in a message: credentials in a URL's userinfo are left out. */
export function redactedNatsUrl(url: string): string {
  return url.replace(/\/\/[^/@,]*@/g, '//');
}

/** First-connection attempts that time out before the boot fails (a starved host can miss the 20-s dial). */
const FIRST_CONNECT_ATTEMPTS = 3;

/**
 * Connects with natsConnectionOptions. A server that refuses the credentials (or wants some) fails the
 * boot with what to set, instead of the client's bare "AUTHORIZATION_VIOLATION". A dial that times out
 * (the server or this process too busy to finish the handshake in time) is tried again, twice.
 */
export async function connectNats(settings: NatsSettings, name: string): Promise<NatsConnection> {
  const options = natsConnectionOptions(settings, name);
  const where = redactedNatsUrl(settings.NATS_URL);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await connect(options);
      } catch (error) {
        if ((error as { code?: string }).code !== 'TIMEOUT' || attempt >= FIRST_CONNECT_ATTEMPTS) throw error;
        process.emitWarning(`NATS at ${where}: connection attempt ${attempt} timed out, retrying`);
      }
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'AUTHORIZATION_VIOLATION') {
      const who = options.user
        ? `the credentials of NATS user "${options.user}"`
        : 'a client without credentials';
      throw new Error(
        `NATS at ${where} refused ${who} (authorization violation): set NATS_USER and ` +
          `NATS_PASSWORD to this process's NATS user and its password (users: infra/nats/nats.conf)`,
      );
    }
    throw error;
  }
}
