import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { testInfrastructure } from '@switchboard/testing';
import { Client, Connection } from '@temporalio/client';
import { KNOWN_STATE_MAX_AGE_MS, SyncSchedules } from './sync-schedules';
import { temporalUnavailable } from './temporal-call';

jest.setTimeout(30_000);

/**
 * A loopback TCP relay in front of the test Temporal that can hold every byte back, as a Temporal too busy
 * to answer looks to its clients (connections open, nothing comes through). What it held goes on, in
 * order, once it thaws, so the HTTP/2 connections stay whole.
 */
class FreezableRelay {
  private frozen = false;
  private readonly held: (() => void)[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  constructor(target: { host: string; port: number }) {
    this.server = createServer((inbound) => {
      const outbound = connect(target.port, target.host);
      for (const [from, to] of [
        [inbound, outbound],
        [outbound, inbound],
      ] as const) {
        this.sockets.add(from);
        from.on('data', (chunk: Buffer) => {
          if (this.frozen) this.held.push(() => to.write(chunk));
          else to.write(chunk);
        });
        from.on('error', () => to.destroy());
        from.on('close', () => {
          this.sockets.delete(from);
          to.destroy();
        });
      }
    });
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const send of this.held.splice(0)) send();
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

describe('SyncSchedules: a schedule state read while Temporal does not answer', () => {
  const taskQueue = `test-schedules-${randomUUID()}`;
  let relay: FreezableRelay;
  let connection: Connection;
  let now = Date.now();
  let schedules: SyncSchedules;
  const created: string[] = [];

  /** A paused schedule of its own (nothing runs: no worker polls the task queue either). */
  const newSchedule = async () => {
    const syncId = randomUUID();
    created.push(syncId);
    await schedules.ensure(syncId, 3_600_000, true);
    return syncId;
  };

  beforeAll(async () => {
    const [host, port] = (await testInfrastructure()).temporalAddress.split(':');
    relay = new FreezableRelay({ host: host!, port: Number(port) });
    connection = await Connection.connect({ address: await relay.listen() });
    // A deadline of a second: a frozen Temporal fails each call quickly.
    schedules = new SyncSchedules(new Client({ connection }), taskQueue, 1_000, () => now);
  });

  afterEach(() => {
    relay.thaw();
    now = Date.now();
  });

  afterAll(async () => {
    for (const syncId of created) await schedules.delete(syncId).catch(() => undefined);
    await connection?.close();
    await relay?.close();
  });

  it('answers the state it last read, and Temporal again once it answers', async () => {
    const syncId = await newSchedule();
    expect(await schedules.state(syncId)).toEqual({ paused: true, nextActionAt: null });

    relay.freeze();
    now += KNOWN_STATE_MAX_AGE_MS - 1_000;
    expect(await schedules.state(syncId)).toEqual({ paused: true, nextActionAt: null });

    relay.thaw();
    await schedules.start(syncId);
    const started = await schedules.state(syncId);
    expect(started).toEqual({ paused: false, nextActionAt: expect.any(Date) });
  });

  it('fails as Temporal unavailable when it read nothing before, or only too long ago', async () => {
    const never = await newSchedule();
    const old = await newSchedule();
    await schedules.state(old);

    relay.freeze();
    now += KNOWN_STATE_MAX_AGE_MS + 1_000;
    for (const syncId of [never, old]) {
      const error = await schedules.state(syncId).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(temporalUnavailable(error)).toBe(true);
    }
  });

  it('never answers a state read before a change this process made', async () => {
    const syncId = await newSchedule();
    await schedules.state(syncId);
    await schedules.start(syncId);

    relay.freeze();
    const error = await schedules.state(syncId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(temporalUnavailable(error)).toBe(true);
  });
});
