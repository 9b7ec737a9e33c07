import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { util } from 'undici';
import type { CallAbort } from './call-abort';

/** A provider's answer: status and headers now, the body once the caller says where it goes. */
export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: UpstreamBody;
}

/** What is read of a body that is thrown away before the connection is dropped instead (as undici's `dump`). */
const DUMP_LIMIT_BYTES = 128 * 1024;

/** What is held of a body that arrives before `pipeTo` or `dump` says where it goes; past it, reading pauses. */
const EARLY_LIMIT_BYTES = 64 * 1024;

/**
 * One request to a provider as an undici dispatch handler whose body goes straight into the caller's
 * response: no intermediate Readable, no `pipe`, no promise per chunk. undici's `request()` builds a
 * Readable per answer and the reverse proxy pipes it on, which costs more than all of this; the
 * handler keeps what that gave: backpressure (a full socket pauses the provider's), teardown of both
 * sides when either breaks off, and a body that can be thrown away instead (retries, redirects).
 *
 * Between the headers and `pipeTo` or `dump` (a promise's turn later), the body that arrives is held, up
 * to 64 KiB, and reading pauses after that: a short answer, which usually comes in the same packet as its
 * headers, is read at once and its connection freed without a pause and resume of the parser. The body
 * emits `close` once, when it is over for whatever reason (for the client span).
 */
export class UpstreamBody extends EventEmitter {
  private abortUpstream: ((reason?: Error) => void) | undefined;
  private resumeUpstream: (() => void) | undefined;
  private sink: NodeJS.WritableStream | undefined;
  private res: ServerResponse | undefined;
  private discarded = -1;
  /** Body chunks read before there was a sink. */
  private early: Buffer[] | undefined;
  private earlyBytes = 0;
  private ended = false;
  private failure: Error | undefined;
  private over = false;
  private tornDown = false;
  /** Resolves `dump`'s promise. */
  private settle: (() => void) | undefined;
  private readonly onAbort = () => this.abortUpstream?.(this.signal.reason);

  private constructor(
    private readonly signal: CallAbort,
    private readonly resolveHeaders: (response: UpstreamResponse) => void,
    private readonly rejectHeaders: (error: Error) => void,
  ) {
    super();
    signal.once('abort', this.onAbort);
  }

  /**
   * Whether `close` was emitted already: a short body can be over before its headers' promise continues
   * (see the class comment), so a listener added then must look here first, as on a Readable.
   */
  get closed(): boolean {
    return this.over;
  }

  /** Sends the request; resolves with the status and headers (the body waits), rejects if none come. */
  static send(
    dispatcher: Dispatcher,
    options: Dispatcher.DispatchOptions,
    signal: CallAbort,
  ): Promise<UpstreamResponse> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      dispatcher.dispatch(options, new UpstreamBody(signal, resolve, reject) as Dispatcher.DispatchHandler);
    });
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.signal.aborted) abort(this.signal.reason);
    else this.abortUpstream = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx: the answer is still to come
    this.resumeUpstream = resume;
    this.resolveHeaders({
      statusCode,
      headers: util.parseHeaders(rawHeaders) as UpstreamResponse['headers'],
      body: this,
    });
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.discarded >= 0) {
      this.discarded += chunk.length;
      if (this.discarded > DUMP_LIMIT_BYTES) this.abortUpstream?.();
      return true;
    }
    if (this.sink) return this.sink.write(chunk);
    (this.early ??= []).push(chunk);
    this.earlyBytes += chunk.length;
    return this.earlyBytes < EARLY_LIMIT_BYTES;
  }

  onComplete(): void {
    this.ended = true;
    if (this.sink) this.sink.end();
    else this.close();
  }

  onError(error: Error): void {
    if (!this.resumeUpstream) {
      this.signal.off('abort', this.onAbort);
      this.rejectHeaders(error);
      return;
    }
    this.failure = error;
    // Mid-body: cutting the caller's connection is how it learns the answer is incomplete.
    if (this.sink) this.teardown();
    else this.close();
  }

  /**
   * Streams the body into `res` (through `transform` if given), resolving once `res` is finished or
   * either side broke off, in which case both connections are torn down.
   */
  pipeTo(res: ServerResponse, transform?: NodeJS.ReadWriteStream): Promise<void> {
    if (this.failure || this.tornDown || (this.over && !this.ended)) {
      res.destroy();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.res = res;
      res.once('close', () => {
        if (!res.writableFinished) this.teardown();
        this.close();
        resolve();
      });
      if (transform) {
        transform.once('error', () => this.teardown());
        transform.pipe(res);
        this.sink = transform;
      } else {
        this.sink = res;
      }
      this.sink.on('drain', () => this.resume());
      let room = true;
      if (this.early) for (const chunk of this.early) room = this.sink.write(chunk);
      this.early = undefined;
      if (this.ended) this.sink.end();
      else if (room) this.resume();
    });
  }

  /** Throws the body away: read to its end when short, else the connection is dropped. */
  dump(): Promise<void> {
    if (this.over) return Promise.resolve();
    return new Promise((resolve) => {
      this.settle = resolve;
      this.discarded = this.earlyBytes;
      this.early = undefined;
      if (this.failure || this.ended) this.close();
      else if (this.discarded > DUMP_LIMIT_BYTES) this.abortUpstream?.();
      else this.resume();
    });
  }

  /**
   * Lets undici read on if it paused for this body. Never once the body is complete: the connection may then
   * carry another request, whose pause is not ours to lift.
   */
  private resume(): void {
    if (!this.ended) this.resumeUpstream?.();
  }

  private teardown(): void {
    if (this.tornDown) return;
    this.tornDown = true;
    if (!this.ended) this.abortUpstream?.();
    if (this.sink !== this.res) (this.sink as unknown as { destroy?: () => void } | undefined)?.destroy?.();
    this.res?.destroy();
    this.close();
  }

  private close(): void {
    if (this.over) return;
    this.over = true;
    this.signal.off('abort', this.onAbort);
    this.emit('close');
    this.settle?.();
  }
}
