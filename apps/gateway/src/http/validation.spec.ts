import { recordsHeadersSchema, SwitchboardError } from '@switchboard/contracts';
import { parseHeaders, parseNoQuery } from './validation';

const thrown = (run: () => unknown): SwitchboardError => {
  try {
    run();
  } catch (error) {
    if (error instanceof SwitchboardError) return error;
    throw error;
  }
  throw new Error('expected a SwitchboardError');
};

describe('parseNoQuery', () => {
  it('accepts a request without query parameters', () => {
    expect(() => parseNoQuery({})).not.toThrow();
    expect(() => parseNoQuery(undefined)).not.toThrow();
  });

  it('refuses any query parameter, naming each', () => {
    const error = thrown(() => parseNoQuery({ page: '2', limit: '10' }));
    expect(error.code).toBe('invalid_query_params');
    expect(error.errors?.map((field) => field.path)).toEqual([['page'], ['limit']]);
  });
});

describe('parseHeaders', () => {
  const valid = { 'connection-id': 'c1', 'provider-config-key': 'github', 'user-agent': 'client' };

  it('returns the headers the schema names', () => {
    expect(parseHeaders(recordsHeadersSchema, valid)).toEqual({
      'connection-id': 'c1',
      'provider-config-key': 'github',
    });
  });

  it('refuses a missing or repeated header as invalid headers, naming it', () => {
    const missing = thrown(() => parseHeaders(recordsHeadersSchema, { 'connection-id': 'c1' }));
    expect(missing.code).toBe('invalid_headers');
    expect(missing.errors?.map((field) => field.path)).toEqual([['provider-config-key']]);
    const repeated = thrown(() =>
      parseHeaders(recordsHeadersSchema, { ...valid, 'connection-id': ['c1', 'c2'] }),
    );
    expect(repeated.errors?.map((field) => field.path)).toEqual([['connection-id']]);
  });
});
