import {
  findHandshake,
  handshakeReply,
  parseBody,
  WebhookBodyTooDeepError,
  routingLookups,
  subscriptionTypesOf,
} from './provider-webhook';
import { request, webhookOf } from './provider-webhook.fixture';

/**
 * What the ingress reads from a webhook's body and headers once it is let in: handshakes to answer, the
 * lookups that route it to a connection, the types syncs subscribe to, and how deep a body may nest.
 */

describe('handshakes', () => {
  it("answers Slack's url_verification with the challenge", () => {
    const body = JSON.stringify({
      token: 't',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const req = request(body, { 'content-type': 'application/json' });
    const handshake = findHandshake(webhookOf('slack'), req);
    expect(handshake?.verify_signature).toBe(true);
    expect(handshakeReply(handshake!, req)).toEqual({
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
    });
    expect(
      findHandshake(webhookOf('slack'), request('{"type":"event_callback","team_id":"T1"}')),
    ).toBeUndefined();
  });

  it("recognises Notion's unsigned verification request only when the token is the sole key", () => {
    const handshake = findHandshake(webhookOf('notion'), request('{"verification_token":"secret_abc"}'));
    expect(handshake).toMatchObject({ verify_signature: false, forward: true });
    expect(
      findHandshake(webhookOf('notion'), request('{"verification_token":"x","type":"page.created"}')),
    ).toBeUndefined();
  });
});

describe('routing lookups from the catalog', () => {
  const lookups = (provider: string, body: string, headers: Record<string, string> = {}) =>
    routingLookups(webhookOf(provider).routing ?? [], request(body, headers));

  it.each([
    [
      'highlevel',
      '{"type":"ContactCreate","locationId":"loc-1","companyId":"co-1"}',
      {},
      [
        { field: 'connection_config.locationId', value: 'loc-1' },
        { field: 'connection_config.companyId', value: 'co-1' },
      ],
    ],
    [
      'calendly',
      '{"event":"invitee.created","created_by":"https://api.calendly.com/users/U1"}',
      {},
      [{ field: 'connection_config.owner', value: 'https://api.calendly.com/users/U1' }],
    ],
    [
      'attio',
      '{"events":[{"event_type":"record.created","id":{"workspace_id":"ws-1"}},{"id":{"workspace_id":"ws-1"}}]}',
      {},
      [{ field: 'connection_config.workspace_id', value: 'ws-1' }],
    ],
    [
      'fathom',
      '{"recorded_by":{"email":"ana@acme.example"}}',
      {},
      [{ field: 'metadata.emailAddress', value: 'ana@acme.example' }],
    ],
    [
      'github-app',
      '{"action":"opened","installation":{"id":4242}}',
      {},
      [{ field: 'connection_config.installation_id', value: '4242' }],
    ],
    [
      'slack',
      '{"type":"event_callback","team_id":"T0001"}',
      {},
      [{ field: 'connection_config.team.id', value: 'T0001' }],
    ],
    [
      'slack',
      `payload=${encodeURIComponent('{"type":"block_actions","team":{"id":"T0002"}}')}`,
      { 'content-type': 'application/x-www-form-urlencoded' },
      [{ field: 'connection_config.team.id', value: 'T0002' }],
    ],
    [
      'hubspot',
      '[{"portalId":62515,"objectId":1},{"portalId":62515,"objectId":2},{"portalId":777,"objectId":3}]',
      {},
      [
        { field: 'connection_config.portalId', value: '62515' },
        { field: 'connection_config.portalId', value: '777' },
      ],
    ],
    [
      'stripe',
      '{"id":"evt_1","account":"acct_123"}',
      {},
      [{ field: 'connection_config.stripe_user_id', value: 'acct_123' }],
    ],
    [
      'linear',
      '{"organizationId":"org-9"}',
      {},
      [{ field: 'connection_config.organizationId', value: 'org-9' }],
    ],
    [
      'jira',
      '{"webhookEvent":"jira:issue_updated","user":{"accountId":"5b10a"}}',
      {},
      [{ field: 'connection_config.accountId', value: '5b10a' }],
    ],
    [
      'shopify',
      '{"id":1}',
      { 'x-shopify-shop-domain': 'acme-store.myshopify.com' },
      [{ field: 'connection_config.subdomain', value: 'acme-store' }],
    ],
    [
      'zendesk',
      '{"type":"zen:event-type:ticket.created"}',
      { 'x-zendesk-account-id': '123456' },
      // Only the metadata the customer's backend sets: Zendesk's account id is not known to come from the
      // provider at connect time, and a connection-config key could be typed on the connect page.
      [{ field: 'metadata.account_id', value: '123456' }],
    ],
    ['intercom', '{"app_id":"ab12cd"}', {}, [{ field: 'connection_config.appId', value: 'ab12cd' }]],
    ['notion', '{"workspace_id":"ws-7"}', {}, [{ field: 'connection_config.workspace_id', value: 'ws-7' }]],
  ])('%s: %s', (provider, body, headers, expected) => {
    expect(lookups(provider, body, headers)).toEqual(expected);
  });

  it('finds nothing to route by when the account id is absent (the webhook is then forwarded raw)', () => {
    expect(lookups('github-app', '{"zen":"Design for failure."}')).toEqual([]);
    expect(lookups('github', '{"zen":"Design for failure."}')).toEqual([]);
  });
});

describe('webhook types from the catalog (what syncs subscribe to)', () => {
  it.each([
    ['github', '{"action":"opened"}', { 'x-github-event': 'issues' }, ['issues']],
    ['linear', '{"type":"Issue","action":"create"}', {}, ['Issue']],
    [
      'hubspot',
      '[{"subscriptionType":"contact.creation"},{"subscriptionType":"deal.deletion"},{"subscriptionType":"contact.creation"}]',
      {},
      ['contact.creation', 'deal.deletion'],
    ],
    [
      'intercom',
      '{"type":"notification_event","topic":"conversation.user.created"}',
      {},
      ['conversation.user.created'],
    ],
    ['notion', '{"type":"page.content_updated","workspace_id":"ws-7"}', {}, ['page.content_updated']],
    ['stripe', '{"id":"evt_1","type":"invoice.paid"}', {}, ['invoice.paid']],
    ['shopify', '{"id":1}', { 'x-shopify-topic': 'orders/create' }, ['orders/create']],
    ['jira', '{"webhookEvent":"jira:issue_updated"}', {}, ['jira:issue_updated']],
    ['jira', '{"payload":{"webhookEvent":"jira:issue_created"}}', {}, ['jira:issue_created']],
    [
      'jira',
      '[{"payload":{"webhookEvent":"jira:issue_created"}},{"payload":{"webhookEvent":"comment_created"}}]',
      {},
      ['jira:issue_created', 'comment_created'],
    ],
    ['linear', '{"action":"create"}', {}, []],
  ])('%s: %s', (provider, body, headers, expected) => {
    expect(subscriptionTypesOf(webhookOf(provider), request(body, headers))).toEqual(expected);
  });
});

describe('parseBody nesting depth', () => {
  const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

  it('parses up to the depth asked, and refuses deeper before parsing, JSON fields of a form too', () => {
    expect(parseBody(Buffer.from(`{"a":${deep(63)}}`), 'application/json', 64)).toEqual({
      a: JSON.parse(deep(63)),
    });
    expect(() => parseBody(Buffer.from(`{"a":${deep(64)}}`), 'application/json', 64)).toThrow(
      WebhookBodyTooDeepError,
    );
    expect(() => parseBody(Buffer.from(deep(10_000)), 'text/plain')).toThrow(
      'The webhook body nests arrays or objects more than 64 levels deep',
    );
    const form = `payload=${encodeURIComponent(deep(100))}&token=t`;
    expect(() => parseBody(Buffer.from(form), 'application/x-www-form-urlencoded')).toThrow(
      WebhookBodyTooDeepError,
    );
  });
});
