import { Logger } from '@nestjs/common';
import type ivm from 'isolated-vm';
import { disposeIsolate, type IsolateFactory, type PreparedIsolate } from './isolates';

const logger = new Logger('Sandbox');

/**
 * Fresh isolates made ahead of need, so a run does not wait the ~15 ms an isolate and its library take
 * (README, "Isolates"). Each one still serves exactly one run and is disposed of after it: a spare has
 * run nothing but the library, so no state of one run reaches another. Spares are kept for the
 * configured memory limit only (a run that asks for less gets an isolate made for it); `configure`
 * sets how many, 0 turns them off; `dispose` drops them all and makes no more.
 */
export class SpareIsolates {
  private readonly spares: PreparedIsolate[] = [];
  private target = 0;
  private memory = 0;
  private refilling = false;
  /** The spare being made right now, if any. */
  private making: Promise<unknown> | undefined;

  constructor(private readonly factory: IsolateFactory) {}

  configure(count: number, memoryMb: number): void {
    this.target = count;
    this.memory = memoryMb;
    while (this.spares.length > count) {
      const spare = this.spares.pop();
      if (spare) disposeIsolate(spare);
    }
    this.refill();
  }

  /** The memory limit spares are made for. */
  get memoryMb(): number {
    return this.memory;
  }

  get available(): number {
    return this.spares.length;
  }

  /** A spare made for this memory limit, if one is ready; another is made in its place. */
  take(memoryMb: number): PreparedIsolate | undefined {
    const spare = memoryMb === this.memory ? this.spares.shift() : undefined;
    this.refill();
    return spare;
  }

  isolates(): ivm.Isolate[] {
    return this.spares.map((s) => s.isolate);
  }

  /** Resolves once as many spares are made as configured (tests). */
  async stocked(): Promise<void> {
    while (this.spares.length < this.target)
      await (this.making ?? new Promise((resolve) => setImmediate(resolve)));
  }

  dispose(): void {
    this.configure(0, this.memory);
  }

  private refill(): void {
    if (this.refilling || this.spares.length >= this.target) return;
    this.refilling = true;
    // Made one at a time, after the run that took one has started: preparing never competes with a
    // run for more than one of the isolate threads.
    setImmediate(() => {
      this.making = this.factory
        .prepare(this.memory)
        .then((prepared) => {
          if (this.spares.length < this.target && prepared.memoryMb === this.memory)
            this.spares.push(prepared);
          else disposeIsolate(prepared);
        })
        .catch((error: unknown) => logger.error(`could not prepare a spare isolate: ${String(error)}`))
        .finally(() => {
          this.refilling = false;
          this.making = undefined;
          if (this.spares.length < this.target) this.refill();
        });
    });
  }
}
