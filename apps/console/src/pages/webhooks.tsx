import {
  Badge,
  Button,
  Checkbox,
  Code,
  Group,
  Modal,
  NativeSelect,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { ApiEnvironment, WebhookDelivery } from '@switchboard/contracts';
import { useState, type FormEvent } from 'react';
import { api } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { Pager, useCursorPages } from '../components/pager';
import { QueryState } from '../components/query-state';

const EVENTS = [
  ['on_auth_creation', 'A connection is created'],
  ['on_auth_refresh_error', 'A token refresh fails'],
  ['on_sync_error', 'A sync fails'],
  ['on_sync_completion_always', 'Every sync completion (also without changes)'],
  ['on_async_action_completion', 'An async action completes'],
] as const;
type EventFlag = (typeof EVENTS)[number][0];

const STATUSES = ['', 'pending', 'delivered', 'failed', 'endpoint_disabled', 'refused', 'dead_lettered'];
const TYPES = ['', 'auth', 'forward', 'sync', 'async_action'];

export function WebhooksPage() {
  const { can } = useSession();
  const environment = useEnvQuery(['environment'], () => api<{ data: ApiEnvironment }>('/environment'), {
    enabled: can('environment:settings:read'),
  });
  return (
    <Page title="Webhooks">
      {can('environment:settings:read') && (
        <QueryState query={environment} label="the webhook settings" empty="">
          {({ data }) => <Settings environment={data} writable={can('environment:settings:write')} />}
        </QueryState>
      )}
      <Deliveries />
    </Page>
  );
}

function Settings({ environment, writable }: { environment: ApiEnvironment; writable: boolean }) {
  const settings = environment.webhook_settings;
  const [primary, setPrimary] = useState(settings.primary_url ?? '');
  const [secondary, setSecondary] = useState(settings.secondary_url ?? '');
  const [flags, setFlags] = useState<Record<EventFlag, boolean>>(
    () => Object.fromEntries(EVENTS.map(([flag]) => [flag, settings[flag]])) as Record<EventFlag, boolean>,
  );
  const [revealed, setRevealed] = useState(false);
  const save = useEnvMutation(
    () =>
      api('/environment', {
        method: 'PATCH',
        body: { webhook_settings: { primary_url: primary, secondary_url: secondary, ...flags } },
      }),
    [['environment']],
  );
  const rotate = useEnvMutation(
    () => api('/environment/webhook-signing-key/rotate', { method: 'POST' }),
    [['environment']],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(undefined);
  };
  return (
    <Stack gap="md">
      <form onSubmit={submit} aria-label="Webhook settings">
        <Stack gap="xs" maw={640}>
          <Title order={2} size="h4">
            Settings
          </Title>
          <TextInput
            label="Webhook URL"
            type="url"
            value={primary}
            readOnly={!writable}
            onChange={(e) => setPrimary(e.currentTarget.value)}
          />
          <TextInput
            label="Secondary webhook URL"
            type="url"
            value={secondary}
            readOnly={!writable}
            onChange={(e) => setSecondary(e.currentTarget.value)}
          />
          <Text size="sm" fw={600}>
            Send a webhook when
          </Text>
          {EVENTS.map(([flag, label]) => (
            <Checkbox
              key={flag}
              label={label}
              checked={flags[flag]}
              disabled={!writable}
              onChange={(e) => {
                const checked = e.currentTarget.checked;
                setFlags((f) => ({ ...f, [flag]: checked }));
              }}
            />
          ))}
          {environment.disabled_webhook_urls.map((d) => (
            <Text size="sm" c="red.9" key={d.url}>
              {d.url} disabled since {new Date(d.disabled_at).toLocaleString()}: {d.reason}
            </Text>
          ))}
          <MutationError mutation={save} title="The settings were not saved" />
          {save.isSuccess && <Text role="status">Settings saved.</Text>}
          {writable && (
            <Group>
              <Button type="submit" loading={save.isPending}>
                Save settings
              </Button>
            </Group>
          )}
        </Stack>
      </form>
      <Stack gap="xs">
        <Title order={2} size="h4">
          Signing key
        </Title>
        <Code data-testid="signing-key">
          {revealed ? environment.webhook_signing_key : '••••••••••••••••'}
        </Code>
        {environment.previous_webhook_signing_key_expires_at && (
          <Text size="sm">
            The previous key still signs until{' '}
            {new Date(environment.previous_webhook_signing_key_expires_at).toLocaleString()}.
          </Text>
        )}
        <Group>
          <Button size="xs" variant="default" onClick={() => setRevealed((r) => !r)}>
            {revealed ? 'Hide signing key' : 'Reveal signing key'}
          </Button>
          {writable && (
            <Button
              size="xs"
              color="red.9"
              loading={rotate.isPending}
              onClick={() => {
                if (
                  window.confirm('Rotate the signing key? The previous key keeps signing for a grace period.')
                )
                  rotate.mutate(undefined);
              }}
            >
              Rotate signing key
            </Button>
          )}
        </Group>
        <MutationError mutation={rotate} title="The key was not rotated" />
      </Stack>
    </Stack>
  );
}

interface DeliveryDetail extends WebhookDelivery {
  body: string;
  attempt_log: {
    attempt: number;
    started_at: string;
    duration_ms: number;
    status_code: number | null;
    error: string | null;
  }[];
}

function Deliveries() {
  const { can } = useSession();
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [connectionId, setConnectionId] = useState('');
  const { page, cursor, reset, go } = useCursorPages<number>();
  const [open, setOpen] = useState<number | null>(null);
  const deliveries = useEnvQuery(['deliveries', status, type, connectionId, cursor], () =>
    api<{ data: WebhookDelivery[]; next_cursor: number | null }>('/environment/webhook-deliveries', {
      query: { limit: 25, cursor, status, type, connection_id: connectionId },
    }),
  );
  const redeliver = useEnvMutation(
    (id: number) => api(`/environment/webhook-deliveries/${id}/redeliver`, { method: 'POST' }),
    [['deliveries']],
  );
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Delivery log
      </Title>
      <Group align="end">
        <NativeSelect
          label="Status"
          data={STATUSES.map((s) => ({ value: s, label: s || 'any' }))}
          value={status}
          onChange={(e) => {
            setStatus(e.currentTarget.value);
            reset();
          }}
        />
        <NativeSelect
          label="Type"
          data={TYPES.map((t) => ({ value: t, label: t || 'any' }))}
          value={type}
          onChange={(e) => {
            setType(e.currentTarget.value);
            reset();
          }}
        />
        <TextInput
          label="Connection id"
          value={connectionId}
          onChange={(e) => {
            setConnectionId(e.currentTarget.value);
            reset();
          }}
        />
      </Group>
      <MutationError mutation={redeliver} title="The webhook was not redelivered" />
      {redeliver.isSuccess && <Text role="status">Redelivery queued.</Text>}
      <QueryState
        query={deliveries}
        label="deliveries"
        empty="No delivery matches."
        isEmpty={(d) => d.data.length === 0}
      >
        {(data) => (
          <>
            <Table striped aria-label="Webhook deliveries">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Created</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Connection</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Attempts</Table.Th>
                  <Table.Th>Last answer</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {data.data.map((d) => (
                  <Table.Tr key={d.id} data-testid="delivery-row">
                    <Table.Td>{new Date(d.created_at).toLocaleString()}</Table.Td>
                    <Table.Td>{d.type}</Table.Td>
                    <Table.Td>{d.connection_id ?? '—'}</Table.Td>
                    <Table.Td>
                      <Badge
                        color={
                          d.status === 'delivered' ? 'teal.9' : d.status === 'pending' ? 'gray.7' : 'red.9'
                        }
                      >
                        {d.status}
                      </Badge>
                    </Table.Td>
                    <Table.Td data-testid="delivery-attempts">{d.attempts}</Table.Td>
                    <Table.Td>{d.last_status_code ?? d.last_error ?? '—'}</Table.Td>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Button
                          size="compact-xs"
                          variant="default"
                          onClick={() => setOpen(d.id)}
                          aria-label={`Details of delivery ${d.id}`}
                        >
                          Details
                        </Button>
                        {can('environment:webhooks:write') && (
                          <Button
                            size="compact-xs"
                            onClick={() => redeliver.mutate(d.id)}
                            aria-label={`Redeliver ${d.id}`}
                          >
                            Redeliver
                          </Button>
                        )}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <Pager
              page={page}
              hasMore={data.next_cursor !== null}
              onChange={(next) => go(next, data.next_cursor)}
            />
          </>
        )}
      </QueryState>
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        opened={open !== null}
        onClose={() => setOpen(null)}
        title={`Delivery ${open ?? ''}`}
        size="lg"
      >
        {open !== null && <DeliveryDetails id={open} />}
      </Modal>
    </Stack>
  );
}

function DeliveryDetails({ id }: { id: number }) {
  const detail = useEnvQuery(['deliveries', 'one', id], () =>
    api<{ data: DeliveryDetail }>(`/environment/webhook-deliveries/${id}`),
  );
  return (
    <QueryState query={detail} label="the delivery" empty="">
      {({ data: d }) => {
        return (
          <Stack gap="xs">
            <Text size="sm">
              {d.type} to {d.url}
            </Text>
            <Code block tabIndex={0} mah={240} style={{ overflow: 'auto' }}>
              {d.body}
            </Code>
            <Table aria-label="Attempts">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Attempt</Table.Th>
                  <Table.Th>Started</Table.Th>
                  <Table.Th>Duration</Table.Th>
                  <Table.Th>Answer</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {d.attempt_log.map((a) => (
                  <Table.Tr key={a.attempt}>
                    <Table.Td>{a.attempt}</Table.Td>
                    <Table.Td>{new Date(a.started_at).toLocaleString()}</Table.Td>
                    <Table.Td>{a.duration_ms} ms</Table.Td>
                    <Table.Td>{a.status_code ?? a.error ?? '—'}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Stack>
        );
      }}
    </QueryState>
  );
}
