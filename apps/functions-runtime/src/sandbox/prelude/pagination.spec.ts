import { createPaginate, nextLink, pick, type ProxyResponse } from './pagination';

/** A provider's pages as the proxy would answer them, and the requests the loop made. */
function provider(answer: (request: any, index: number) => ProxyResponse) {
  const requests: any[] = [];
  const proxy = (request: any) => {
    requests.push(structuredClone(request));
    return Promise.resolve(answer(request, requests.length - 1));
  };
  return { proxy, requests };
}

async function pages(generator: AsyncGenerator<unknown[]>): Promise<unknown[][]> {
  const out: unknown[][] = [];
  for await (const page of generator) out.push(page);
  return out;
}

const paginateWith = (proxy: (request: any) => Promise<ProxyResponse>, defaults: object | null = null) =>
  createPaginate({ proxy, providerDefaults: () => Promise.resolve(defaults), URL: () => URL });

describe('prelude pagination', () => {
  it('picks a dotted path, and stops at a missing step', () => {
    expect(pick({ a: { b: [1] } }, 'a.b')).toEqual([1]);
    expect(pick({ a: null }, 'a.b.c')).toBeUndefined();
    expect(pick([1], undefined)).toEqual([1]);
  });

  it('finds the next link among several relations of a Link header', () => {
    const header = '<https://api.test/items?page=1>; rel="prev", <https://api.test/items?page=3>; rel="next"';
    expect(nextLink(header, 'next')).toBe('https://api.test/items?page=3');
    expect(nextLink(header, 'last')).toBeUndefined();
    expect(nextLink(undefined, 'next')).toBeUndefined();
  });

  it('follows a cursor until the provider gives none, sending it where the settings say', async () => {
    const { proxy, requests } = provider((_r, i) => ({
      data: { items: [i], meta: { next: i < 2 ? 'c' + (i + 1) : '' } },
      headers: {},
    }));
    const paginate = paginateWith(proxy);
    const got = await pages(
      paginate({
        endpoint: '/items',
        paginate: {
          type: 'cursor',
          response_path: 'items',
          cursor_path_in_response: 'meta.next',
          cursor_name_in_request: 'after',
          limit: 1,
          limit_name_in_request: 'per_page',
        },
      }),
    );
    expect(got).toEqual([[0], [1], [2]]);
    expect(requests.map((r) => r.params)).toEqual([
      { per_page: 1 },
      { per_page: 1, after: 'c1' },
      { per_page: 1, after: 'c2' },
    ]);
    expect(requests[0].method).toBe('GET');
  });

  it('puts the cursor in the body of a POST', async () => {
    const { proxy, requests } = provider((_r, i) => ({
      data: { rows: i === 0 ? [1] : [], next: 'n' },
      headers: {},
    }));
    await pages(
      paginateWith(proxy)({
        method: 'post',
        endpoint: '/search',
        data: { q: 'x' },
        paginate: {
          type: 'cursor',
          response_path: 'rows',
          cursor_path_in_response: 'next',
          cursor_name_in_request: 'cursor',
        },
      }),
    );
    expect(requests.map((r) => r.data)).toEqual([{ q: 'x' }, { q: 'x', cursor: 'n' }]);
    expect(requests[1].params).toBeUndefined();
  });

  it('follows the Link header as a path on the same provider, without the first call’s params', async () => {
    const { proxy, requests } = provider((_r, i) => ({
      data: [i],
      headers: i === 0 ? { link: '<https://api.test/v2/items?page=2&x=1>; rel="next"' } : {},
    }));
    const got = await pages(
      paginateWith(proxy)({
        endpoint: '/v2/items',
        params: { page: 1 },
        paginate: { type: 'link', link_rel_in_response_header: 'next' },
      }),
    );
    expect(got).toEqual([[0], [1]]);
    expect(requests[1].endpoint).toBe('/v2/items?page=2&x=1');
    expect(requests[1].params).toBeUndefined();
  });

  it('counts an offset by records, and stops at a short page', async () => {
    const { proxy, requests } = provider((_r, i) => ({
      data: { list: i === 0 ? ['a', 'b'] : ['c'] },
      headers: {},
    }));
    const got = await pages(
      paginateWith(proxy)({
        endpoint: '/list',
        paginate: {
          type: 'offset',
          response_path: 'list',
          offset_name_in_request: 'skip',
          limit: 2,
          limit_name_in_request: 'take',
        },
      }),
    );
    expect(got).toEqual([['a', 'b'], ['c']]);
    expect(requests.map((r) => r.params)).toEqual([
      { take: 2, skip: '0' },
      { take: 2, skip: '2' },
    ]);
  });

  it('counts an offset by pages when the provider says per-page, from its own defaults', async () => {
    const { proxy, requests } = provider((_r, i) => ({ data: i < 2 ? [i] : [], headers: {} }));
    const defaults = {
      type: 'offset',
      offset_name_in_request: 'page',
      offset_start_value: 1,
      offset_calculation_method: 'per-page',
    };
    await pages(paginateWith(proxy, defaults)({ endpoint: '/p' }));
    expect(requests.map((r) => r.params.page)).toEqual(['1', '2', '3']);
  });

  it('refuses a provider without a pagination type, and a response without the array', async () => {
    const { proxy } = provider(() => ({ data: { items: 'no' }, headers: {} }));
    await expect(pages(paginateWith(proxy)({ endpoint: '/x' }))).rejects.toThrow('no pagination type');
    await expect(
      pages(paginateWith(proxy)({ endpoint: '/x', paginate: { type: 'cursor', response_path: 'items' } })),
    ).rejects.toThrow('the response has no array at "items"');
  });
});
