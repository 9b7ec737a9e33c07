import { createHash } from 'node:crypto';
import { NIL, v5 as uuidv5 } from 'uuid';
import { RecordIds, dataHash } from './record-keys';

describe('record keys', () => {
  it('gives every record the uuidv5 of its scope, model and external id (the ids rows were stored under)', () => {
    const scope = { environmentId: 42, providerConfigKey: 'fake-crm', connectionId: 'conn-ü-1' };
    const ids = new RecordIds(scope, 'Contact::eu');
    const prefix = JSON.stringify([42, 'fake-crm', 'conn-ü-1']) + 'Contact::eu';
    const namespace = uuidv5(prefix, NIL);
    for (const externalId of ['1', 'abc', '', 'ünïcødé-😀', 'x'.repeat(500), '"quoted"\\back']) {
      expect(ids.of(externalId)).toBe(uuidv5(prefix + externalId, namespace));
    }
  });

  it('hashes a record as the md5 hex of its JSON (Nango data_hash)', () => {
    for (const json of ['{"id":"1"}', '{"id":"ü","n":"😀"}', '']) {
      expect(dataHash(json)).toBe(createHash('md5').update(json).digest('hex'));
    }
  });
});
