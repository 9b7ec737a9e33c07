import { RunSlots } from './run-slots';

describe('RunSlots', () => {
  it('lets `size` runs in at once and the next one in only when one leaves, in arrival order', async () => {
    const slots = new RunSlots(2);
    const order: string[] = [];
    const a = await slots.acquire();
    const b = await slots.acquire();
    const c = slots.acquire().then((release) => (order.push('c'), release));
    const d = slots.acquire().then((release) => (order.push('d'), release));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    a();
    a(); // a second release of the same slot frees nothing more
    await c;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['c']);
    b();
    await d;
    expect(order).toEqual(['c', 'd']);
  });
});
