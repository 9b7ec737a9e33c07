import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import {
  CONNECT_SESSION_TTL_MS,
  OAUTH_SOCKET_SUBJECTS,
  oauthSocketClaimReplySchema,
  oauthSocketClaimSchema,
  oauthSocketResultSchema,
  type OAuthSocketFrame,
} from '@switchboard/contracts';
import { NATS_CONNECTION } from '@switchboard/messaging';
import type { NatsConnection, Subscription } from 'nats';
import { WebSocketServer, type WebSocket } from 'ws';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';

/** How long a claim may wait for the replica holding the socket (a request on the gateway's own NATS). */
const CLAIM_TIMEOUT_MS = 3_000;
/** A browser that opened a socket and never started a flow with it does not keep it open forever. */
const SOCKET_LIFETIME_MS = CONNECT_SESSION_TTL_MS;
/** Idle sockets cost memory and a NATS subscription each: past this many, a replica refuses new ones. */
const MAX_SOCKETS_PER_REPLICA = 10_000;
/** Load balancers drop a WebSocket idle for about a minute; an end user may spend longer at the provider. */
const PING_INTERVAL_MS = 25_000;
/** Between the frame and the close: the frame goes out before the close frame either way; this is slack. */
const CLOSE_AFTER_FRAME_MS = 1_000;

interface HeldSocket {
  socket: WebSocket;
  subscription: Subscription;
  /** The connect session of the first flow started for this socket: the only one whose outcome it hears. */
  claimedBy: number | null;
  expiry: NodeJS.Timeout;
  ping: NodeJS.Timeout;
}

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const decode = (data: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(data));

/**
 * `@nangohq/frontend`'s WebSocket (Nango's publisher protocol): `nango.auth()` opens `ws(s)://<host>/`,
 * gets `{message_type:'connection_ack', ws_client_id}`, sends its popup to `/oauth/connect/{key}` with
 * that id, and learns the outcome only from a later `success` or `error` frame on the socket.
 *
 * The socket is held by one replica; the popup's start and the provider's callback may reach another.
 * Every replica subscribes per socket it holds (OAUTH_SOCKET_SUBJECTS), so whichever replica handles
 * the flow claims the socket and sends it its frame over NATS.
 *
 * Who can hear what: the id is drawn here (122 random bits), never chosen by the browser; it is handed
 * only to the socket that opened (from an allowed origin); the first flow started with it claims it for
 * its connect session, and the socket then takes frames of that session only. Frames name the
 * integration and connection id, never a credential.
 */
@Injectable()
export class OAuthSockets implements OnApplicationShutdown {
  private readonly logger = new Logger('OAuthSockets');
  private readonly wss = new WebSocketServer({
    noServer: true,
    // The browser never needs to say anything on this socket.
    maxPayload: 1024,
    perMessageDeflate: false,
  });
  private readonly held = new Map<string, HeldSocket>();
  private readonly allowedOrigins: ReadonlySet<string>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(GATEWAY_ENV) env: GatewayEnv,
  ) {
    this.allowedOrigins = new Set([
      new URL(env.SWITCHBOARD_CONNECT_URL).origin,
      ...env.SWITCHBOARD_CONNECT_ALLOWED_ORIGINS,
    ]);
  }

  /** Takes WebSocket upgrades on `/` (Nango's default `websocketsPath`); every other upgrade is refused. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/') return refuse(socket, 404, 'Not Found');
      // Browsers always send Origin on a WebSocket: only the customer's app (and our connect page) may
      // open one, as only they may hear the callback page (cross-site WebSocket hijacking).
      const origin = req.headers.origin;
      if (!origin || !this.allowedOrigins.has(origin)) return refuse(socket, 403, 'Forbidden');
      if (this.held.size >= MAX_SOCKETS_PER_REPLICA) return refuse(socket, 503, 'Service Unavailable');
      this.wss.handleUpgrade(req, socket, head, (ws) => this.hold(ws));
    });
  }

  /**
   * Ties the socket to the session starting a flow with it. False when no replica holds it, or when a flow
   * of another session claimed it first (someone else's id: its owner must not hear a stranger's outcome).
   */
  async claim(wsClientId: string, sessionId: number): Promise<boolean> {
    try {
      const reply = await this.nc.request(OAUTH_SOCKET_SUBJECTS.claim(wsClientId), encode({ sessionId }), {
        timeout: CLAIM_TIMEOUT_MS,
      });
      const parsed = oauthSocketClaimReplySchema.safeParse(decode(reply.data));
      return parsed.success && parsed.data.ok;
    } catch {
      // No responders (no replica holds it) or no answer in time.
      return false;
    }
  }

  /** Sends a frame to the socket, wherever it is held; it is dropped unless the socket is claimed by `sessionId`. */
  publish(wsClientId: string, sessionId: number, frame: OAuthSocketFrame): void {
    this.nc.publish(OAUTH_SOCKET_SUBJECTS.result(wsClientId), encode({ sessionId, frame }));
  }

  onApplicationShutdown(): void {
    for (const id of [...this.held.keys()]) this.release(id, 1001);
    this.wss.close();
  }

  private hold(socket: WebSocket): void {
    const id = randomUUID();
    const subscription = this.nc.subscribe(OAUTH_SOCKET_SUBJECTS.socket(id), {
      callback: (error, msg) => {
        if (error) return;
        let data: unknown;
        try {
          data = decode(msg.data);
        } catch {
          return;
        }
        if (msg.subject.endsWith('.claim')) {
          const claim = oauthSocketClaimSchema.safeParse(data);
          const entry = this.held.get(id);
          let ok = false;
          if (claim.success && entry) {
            if (entry.claimedBy === null) entry.claimedBy = claim.data.sessionId;
            ok = entry.claimedBy === claim.data.sessionId;
          }
          msg.respond(encode({ ok }));
          return;
        }
        const result = oauthSocketResultSchema.safeParse(data);
        if (result.success) this.deliver(id, result.data.sessionId, result.data.frame);
      },
    });
    const expiry = setTimeout(() => this.release(id, 1000), SOCKET_LIFETIME_MS);
    expiry.unref();
    const ping = setInterval(() => socket.ping(), PING_INTERVAL_MS);
    ping.unref();
    this.held.set(id, { socket, subscription, claimedBy: null, expiry, ping });
    socket.on('close', () => this.release(id));
    socket.on('error', () => this.release(id));
    socket.send(JSON.stringify({ message_type: 'connection_ack', ws_client_id: id }));
  }

  private deliver(id: string, sessionId: number, frame: OAuthSocketFrame): void {
    const entry = this.held.get(id);
    if (!entry) return;
    if (entry.claimedBy === null || entry.claimedBy !== sessionId) {
      this.logger.warn('Dropped an OAuth outcome for a socket its session did not claim');
      return;
    }
    entry.socket.send(JSON.stringify(frame));
    // One flow per socket (the SDK opens a new one per auth()); it closes it on the frame, we make sure.
    setTimeout(() => this.release(id, 1000), CLOSE_AFTER_FRAME_MS).unref();
  }

  private release(id: string, code?: number): void {
    const entry = this.held.get(id);
    if (!entry) return;
    this.held.delete(id);
    clearTimeout(entry.expiry);
    clearInterval(entry.ping);
    entry.subscription.unsubscribe();
    if (code !== undefined && entry.socket.readyState === entry.socket.OPEN) entry.socket.close(code);
  }
}

function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
