import { RECORDS_MESSAGE_BYTES, recordsMessageBytes } from './records';
import { NATS_MAX_PAYLOAD_BYTES } from './nats-permissions';

describe('recordsMessageBytes', () => {
  it("keeps the 1 MB server's budget when the server allows no more (or says nothing)", () => {
    expect(recordsMessageBytes(undefined)).toBe(RECORDS_MESSAGE_BYTES);
    expect(recordsMessageBytes(1024 * 1024)).toBe(RECORDS_MESSAGE_BYTES);
    expect(recordsMessageBytes(64 * 1024)).toBe(RECORDS_MESSAGE_BYTES);
  });

  it('fits a 1000-record page of 1 KB records in one message on the generated server configuration', () => {
    const budget = recordsMessageBytes(NATS_MAX_PAYLOAD_BYTES);
    expect(budget).toBeGreaterThan(1000 * (1024 + 300));
    expect(budget).toBeLessThan(NATS_MAX_PAYLOAD_BYTES);
    expect(recordsMessageBytes(64 * 1024 * 1024)).toBe(4 * 1024 * 1024);
  });
});
