import {
  Badge,
  Button,
  Card,
  Checkbox,
  Code,
  Group,
  JsonInput,
  NativeSelect,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { ApiPublicConnection, ApiPublicConnectionFull, SyncStatusItem } from '@switchboard/contracts';
import { useState, type FormEvent } from 'react';
import { useParams } from 'react-router';
import { api } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { ErrorAlert } from '../components/error-alert';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { Pager, useCursorPages } from '../components/pager';
import { QueryState } from '../components/query-state';

export function ConnectionPage() {
  const params = useParams();
  const integration = params.integration!;
  const connectionId = params.connectionId!;
  // The list route answers the connection without its credentials (the single-connection route includes
  // them for a role that may read them): credentials reach the page only when the user asks to see them.
  const connection = useEnvQuery(['connections', 'one', integration, connectionId], async () => {
    const { connections } = await api<{ connections: ApiPublicConnection[] }>('/connections', {
      query: { connectionId, integrationId: integration, limit: 1 },
    });
    const found = connections.find(
      (c) => c.connection_id === connectionId && c.provider_config_key === integration,
    );
    if (!found) throw new Error(`No connection ${connectionId} of ${integration} in this environment`);
    return found;
  });
  return (
    <Page title={`Connection ${connectionId}`}>
      <QueryState query={connection} label="the connection" empty="">
        {(data) => <ConnectionDetail connection={data} />}
      </QueryState>
    </Page>
  );
}

function ConnectionDetail({ connection }: { connection: ApiPublicConnection }) {
  const { can } = useSession();
  const key = connection.provider_config_key;
  return (
    <Stack gap="lg">
      <Group>
        <Badge>{key}</Badge>
        <Badge color="gray.7">{connection.provider}</Badge>
        {connection.errors.length ? (
          <Badge color="red.9" data-testid="connection-status">
            {connection.errors.map((e) => `${e.type} error`).join(', ')}
          </Badge>
        ) : (
          <Badge color="teal.9" data-testid="connection-status">
            Healthy
          </Badge>
        )}
        <Text size="sm">Created {new Date(connection.created).toLocaleString()}</Text>
        {connection.end_user && (
          <Text size="sm">End user: {connection.end_user.display_name ?? connection.end_user.id}</Text>
        )}
      </Group>
      {connection.errors.length > 0 && (
        <Card withBorder>
          <Text fw={600}>Errors</Text>
          {connection.errors.map((e) => (
            <Text size="sm" key={e.log_id}>
              {e.type} error (log {e.log_id})
            </Text>
          ))}
        </Card>
      )}
      <Credentials connection={connection} />
      <Metadata connection={connection} writable={can('environment:connections:write')} />
      {can('environment:syncs:read') && <Syncs connection={connection} />}
      {can('environment:records:read') && <Records connection={connection} />}
    </Stack>
  );
}

function Credentials({ connection }: { connection: ApiPublicConnection }) {
  const { can } = useSession();
  const [revealed, setRevealed] = useState(false);
  const full = useEnvQuery(
    ['connections', 'credentials', connection.provider_config_key, connection.connection_id],
    () =>
      api<ApiPublicConnectionFull>(`/connections/${encodeURIComponent(connection.connection_id)}`, {
        query: { provider_config_key: connection.provider_config_key },
      }),
    { enabled: revealed, staleTime: 0, gcTime: 0 },
  );
  const mayRead = can('environment:connections:read_credentials');
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Credentials
      </Title>
      {!revealed && <Code data-testid="credentials-masked">••••••••••••</Code>}
      {mayRead ? (
        <Group>
          <Button size="xs" variant="default" onClick={() => setRevealed((r) => !r)}>
            {revealed ? 'Hide credentials' : 'Reveal credentials'}
          </Button>
          <Text size="xs" c="dimmed">
            Revealing is recorded in the audit log.
          </Text>
        </Group>
      ) : (
        <Text size="xs" c="dimmed">
          Your role cannot read credentials.
        </Text>
      )}
      {revealed && full.isError && <ErrorAlert error={full.error} title="Could not read the credentials" />}
      {revealed && full.data && (
        <Code block data-testid="credentials">
          {JSON.stringify(full.data.credentials, null, 2)}
        </Code>
      )}
    </Stack>
  );
}

function Metadata({ connection, writable }: { connection: ApiPublicConnection; writable: boolean }) {
  const [text, setText] = useState(JSON.stringify(connection.metadata ?? {}, null, 2));
  const [invalid, setInvalid] = useState<string | null>(null);
  const save = useEnvMutation(
    (metadata: Record<string, unknown>) =>
      api('/connections/metadata', {
        method: 'POST',
        body: {
          connection_id: connection.connection_id,
          provider_config_key: connection.provider_config_key,
          metadata,
        },
      }),
    [['connections']],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        setInvalid('Metadata must be a JSON object');
        return;
      }
      setInvalid(null);
      save.mutate(parsed as Record<string, unknown>);
    } catch (error) {
      setInvalid(error instanceof Error ? error.message : 'Not JSON');
    }
  };
  return (
    <form onSubmit={submit} aria-label="Metadata">
      <Stack gap="xs" maw={640}>
        <Title order={2} size="h4">
          Metadata
        </Title>
        <JsonInput
          label="Metadata (JSON)"
          value={text}
          onChange={setText}
          readOnly={!writable}
          autosize
          minRows={3}
          error={invalid}
        />
        <MutationError mutation={save} title="The metadata was not saved" />
        {save.isSuccess && <Text role="status">Metadata saved.</Text>}
        {writable && (
          <Group>
            <Button type="submit" size="xs" loading={save.isPending}>
              Save metadata
            </Button>
          </Group>
        )}
      </Stack>
    </form>
  );
}

function Syncs({ connection }: { connection: ApiPublicConnection }) {
  const { can } = useSession();
  const base = {
    provider_config_key: connection.provider_config_key,
    connection_id: connection.connection_id,
  };
  const status = useEnvQuery(
    ['syncs', connection.provider_config_key, connection.connection_id],
    () => api<{ syncs: SyncStatusItem[] }>('/sync/status', { query: { syncs: '*', ...base } }),
    // While a run is going, watch it.
    {
      refetchInterval: (query) =>
        query.state.data?.syncs.some((s) => s.status === 'RUNNING') ? 1500 : 10_000,
    },
  );
  const invalidate = [['syncs'], ['records']];
  const trigger = useEnvMutation(
    (name: string) => api('/sync/trigger', { method: 'POST', body: { syncs: [name], ...base } }),
    invalidate,
  );
  const pause = useEnvMutation(
    (name: string) => api('/sync/pause', { method: 'POST', body: { syncs: [name], ...base } }),
    invalidate,
  );
  const start = useEnvMutation(
    (name: string) => api('/sync/start', { method: 'POST', body: { syncs: [name], ...base } }),
    invalidate,
  );
  const frequency = useEnvMutation(
    ({ name, value }: { name: string; value: string }) =>
      api('/sync/update-connection-frequency', {
        method: 'PUT',
        body: { sync_name: name, ...base, frequency: value || null },
      }),
    invalidate,
  );
  const writable = can('environment:syncs:update');
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Syncs
      </Title>
      {[trigger, pause, start, frequency].map((m, i) => (
        <MutationError key={i} mutation={m} />
      ))}
      <QueryState
        query={status}
        label="syncs"
        empty="No sync for this connection."
        isEmpty={(d) => d.syncs.length === 0}
      >
        {({ syncs }) => (
          <Table aria-label="Syncs">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Sync</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Last run</Table.Th>
                <Table.Th>Last result</Table.Th>
                <Table.Th>Records</Table.Th>
                <Table.Th>Frequency</Table.Th>
                {writable && <Table.Th>Actions</Table.Th>}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {syncs.map((sync) => (
                <Table.Tr key={sync.id} data-testid={`sync-${sync.name}`}>
                  <Table.Td>
                    {sync.name}
                    {sync.variant !== 'base' ? ` (${sync.variant})` : ''}
                  </Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>
                    <Badge
                      data-testid="sync-status"
                      color={
                        sync.status === 'ERROR' ? 'red.9' : sync.status === 'SUCCESS' ? 'teal.9' : 'gray.7'
                      }
                    >
                      {sync.status}
                    </Badge>
                  </Table.Td>
                  <Table.Td>
                    {sync.finishedAt ? new Date(sync.finishedAt).toLocaleString() : 'never'}
                  </Table.Td>
                  <Table.Td data-testid="sync-result">
                    {Object.entries(sync.latestResult ?? {})
                      .map(([model, c]) => `${model}: +${c.added} ~${c.updated} -${c.deleted}`)
                      .join('; ') || '—'}
                  </Table.Td>
                  <Table.Td data-testid="sync-records">
                    {Object.entries(sync.recordCount)
                      .map(([model, n]) => `${model}: ${n}`)
                      .join('; ') || '0'}
                  </Table.Td>
                  <Table.Td>{sync.frequency ?? '—'}</Table.Td>
                  {writable && (
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Button
                          size="compact-xs"
                          onClick={() => trigger.mutate(sync.name)}
                          aria-label={`Trigger ${sync.name}`}
                        >
                          Trigger
                        </Button>
                        {sync.status === 'PAUSED' || sync.status === 'STOPPED' ? (
                          <Button
                            size="compact-xs"
                            variant="default"
                            onClick={() => start.mutate(sync.name)}
                            aria-label={`Start ${sync.name}`}
                          >
                            Start
                          </Button>
                        ) : (
                          <Button
                            size="compact-xs"
                            variant="default"
                            onClick={() => pause.mutate(sync.name)}
                            aria-label={`Pause ${sync.name}`}
                          >
                            Pause
                          </Button>
                        )}
                        <FrequencyForm
                          onSubmit={(value) => frequency.mutate({ name: sync.name, value })}
                          name={sync.name}
                        />
                      </Group>
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </QueryState>
    </Stack>
  );
}

function FrequencyForm({ name, onSubmit }: { name: string; onSubmit(value: string): void }) {
  const [value, setValue] = useState('');
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(value);
      }}
    >
      <Group gap={4} wrap="nowrap">
        <TextInput
          size="xs"
          w={110}
          aria-label={`New frequency of ${name}`}
          placeholder="every hour"
          value={value}
          onChange={(e) => setValue(e.currentTarget.value)}
        />
        <Button size="compact-xs" variant="default" type="submit">
          Set
        </Button>
      </Group>
    </form>
  );
}

interface RecordsPage {
  records: ({
    id: string;
    _nango_metadata: { last_action: string; deleted_at: string | null; last_modified_at: string };
  } & Record<string, unknown>)[];
  next_cursor: string | null;
}

function Records({ connection }: { connection: ApiPublicConnection }) {
  const status = useEnvQuery(['syncs', connection.provider_config_key, connection.connection_id], () =>
    api<{ syncs: SyncStatusItem[] }>('/sync/status', {
      query: {
        syncs: '*',
        provider_config_key: connection.provider_config_key,
        connection_id: connection.connection_id,
      },
    }),
  );
  const models = [...new Set((status.data?.syncs ?? []).flatMap((s) => Object.keys(s.recordCount)))];
  const [chosen, setChosen] = useState<string | null>(null);
  const model = chosen ?? models[0] ?? null;
  const [modifiedAfter, setModifiedAfter] = useState('');
  const [deletedOnly, setDeletedOnly] = useState(false);
  const { page, cursor, reset, go } = useCursorPages<string>();
  // The syncs' counts of the model: while a run saves records they change, and the page is read again.
  const saved = (status.data?.syncs ?? []).map((s) => (model ? (s.recordCount[model] ?? 0) : 0)).join(',');
  const records = useEnvQuery(
    [
      'records',
      connection.provider_config_key,
      connection.connection_id,
      model,
      modifiedAfter,
      deletedOnly,
      cursor,
      saved,
    ],
    () =>
      api<RecordsPage>('/records', {
        headers: {
          'Connection-Id': connection.connection_id,
          'Provider-Config-Key': connection.provider_config_key,
        },
        query: {
          model,
          limit: 25,
          cursor,
          modified_after: modifiedAfter ? new Date(modifiedAfter).toISOString() : undefined,
          filter: deletedOnly ? 'deleted' : undefined,
        },
      }),
    { enabled: model !== null },
  );
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Records
      </Title>
      {models.length === 0 ? (
        <Text c="dimmed">No record synced yet.</Text>
      ) : (
        <>
          <Group align="end">
            <NativeSelect
              label="Model"
              data={models}
              value={model ?? ''}
              onChange={(e) => {
                setChosen(e.currentTarget.value);
                reset();
              }}
            />
            <TextInput
              label="Modified after"
              type="datetime-local"
              value={modifiedAfter}
              onChange={(e) => {
                setModifiedAfter(e.currentTarget.value);
                reset();
              }}
            />
            <Checkbox
              label="Deleted only"
              checked={deletedOnly}
              onChange={(e) => {
                setDeletedOnly(e.currentTarget.checked);
                reset();
              }}
            />
          </Group>
          <QueryState
            query={records}
            label="records"
            empty="No record matches."
            isEmpty={(d) => d.records.length === 0}
          >
            {(data) => (
              <>
                <Table aria-label={`Records of ${model}`}>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Id</Table.Th>
                      <Table.Th>Last action</Table.Th>
                      <Table.Th>Modified</Table.Th>
                      <Table.Th>Record</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.records.map((record) => {
                      const { _nango_metadata: meta, ...rest } = record;
                      return (
                        <Table.Tr key={record.id}>
                          <Table.Td>{record.id}</Table.Td>
                          <Table.Td>{meta.deleted_at ? 'deleted' : meta.last_action.toLowerCase()}</Table.Td>
                          <Table.Td>{new Date(meta.last_modified_at).toLocaleString()}</Table.Td>
                          <Table.Td>
                            <Code>{JSON.stringify(rest).slice(0, 200)}</Code>
                          </Table.Td>
                        </Table.Tr>
                      );
                    })}
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
        </>
      )}
    </Stack>
  );
}
