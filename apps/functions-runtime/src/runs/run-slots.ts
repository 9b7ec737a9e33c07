/** A counting semaphore: at most `size` runs hold a slot; the others wait in arrival order. */
export class RunSlots {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  async acquire(): Promise<() => void> {
    if (this.busy >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `busy` only drops when nobody waits.
      if (next) next();
      else this.busy--;
    };
  }
}
