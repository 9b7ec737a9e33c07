import {
  Anchor,
  Button,
  Checkbox,
  Code,
  Group,
  NativeSelect,
  PasswordInput,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { CreatedApiKey, EnvironmentVariable, Scope } from '@switchboard/contracts';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { useSession, type Role } from '../api/session';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { QueryState } from '../components/query-state';

export function SettingsPage() {
  const { can, session } = useSession();
  const sections = [
    can('environment:api_keys:write') && <ApiKeys key="keys" />,
    can('environment:environment_variables:read') && <Variables key="vars" />,
    session.user.role === 'admin' && <Users key="users" />,
  ].filter(Boolean);
  return (
    <Page
      title="Settings"
      actions={
        session.user.role === 'admin' && (
          <Anchor component={Link} to="/settings/audit">
            Audit log
          </Anchor>
        )
      }
    >
      {sections.length ? sections : <Text c="dimmed">Your role has no settings to manage.</Text>}
    </Page>
  );
}

interface ApiKeyRow {
  id: number | string;
  name: string;
  scopes: Scope[];
  created_at: string;
  last_used_at?: string | null;
  key_suffix: string;
}

function ApiKeys() {
  const { session } = useSession();
  const keys = useEnvQuery(['api-keys'], () => api<{ api_keys: ApiKeyRow[] }>('/environment/api-keys'));
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>([]);
  const create = useEnvMutation(
    () =>
      api<{ data: CreatedApiKey }>('/environment/api-keys', {
        method: 'POST',
        body: { display_name: name, scopes },
      }),
    [['api-keys']],
    {
      onSuccess: () => {
        setName('');
        setScopes([]);
      },
    },
  );
  const revoke = useEnvMutation(
    (id: number | string) => api(`/environment/api-keys/${id}`, { method: 'DELETE' }),
    [['api-keys']],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(undefined);
  };
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        API keys
      </Title>
      <QueryState query={keys} label="API keys" empty="No API key." isEmpty={(d) => d.api_keys.length === 0}>
        {(data) => (
          <Table aria-label="API keys">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Key</Table.Th>
                <Table.Th>Scopes</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.api_keys.map((key) => (
                <Table.Tr key={key.id} data-testid={`api-key-${key.name}`}>
                  <Table.Td>{key.name}</Table.Td>
                  <Table.Td>…{key.key_suffix}</Table.Td>
                  <Table.Td>{key.scopes.length} scopes</Table.Td>
                  <Table.Td>{new Date(key.created_at).toLocaleString()}</Table.Td>
                  <Table.Td>
                    {key.last_used_at ? new Date(key.last_used_at).toLocaleString() : 'never'}
                  </Table.Td>
                  <Table.Td>
                    <Button
                      size="compact-xs"
                      color="red.9"
                      variant="outline"
                      aria-label={`Revoke ${key.name}`}
                      onClick={() => {
                        if (
                          window.confirm(`Revoke the key ${key.name}? Callers using it are refused at once.`)
                        )
                          revoke.mutate(key.id);
                      }}
                    >
                      Revoke
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </QueryState>
      <MutationError mutation={revoke} title="The key was not revoked" />
      <form onSubmit={submit} aria-label="New API key">
        <Stack gap="xs">
          <TextInput
            label="Key name"
            required
            maw={360}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
          <Checkbox.Group
            label="Scopes"
            description="A key can only hold scopes you hold"
            value={scopes}
            onChange={(v) => setScopes(v as Scope[])}
          >
            <SimpleGrid cols={{ base: 1, md: 2 }} spacing={4} mt={4}>
              {session.scopes.map((scope) => (
                <Checkbox key={scope} value={scope} label={scope} />
              ))}
            </SimpleGrid>
          </Checkbox.Group>
          <Group>
            <Button size="xs" variant="default" onClick={() => setScopes(session.scopes)}>
              Select all
            </Button>
            <Button type="submit" loading={create.isPending}>
              Create key
            </Button>
          </Group>
          <MutationError mutation={create} title="The key was not created" />
          {create.data && (
            <Stack gap={4}>
              <Text size="sm" fw={600}>
                Copy the secret key of {create.data.data.display_name} now: it is not shown again.
              </Text>
              <Code data-testid="new-secret-key">{create.data.data.secret_key}</Code>
            </Stack>
          )}
        </Stack>
      </form>
    </Stack>
  );
}

function Variables() {
  const { can } = useSession();
  const vars = useEnvQuery(['environment-variables'], () =>
    api<EnvironmentVariable[]>('/environment-variables'),
  );
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Environment variables
      </Title>
      <QueryState query={vars} label="environment variables" empty="">
        {(data) => <VariablesForm initial={data} writable={can('environment:environment_variables:write')} />}
      </QueryState>
    </Stack>
  );
}

function VariablesForm({ initial, writable }: { initial: EnvironmentVariable[]; writable: boolean }) {
  const [rows, setRows] = useState<EnvironmentVariable[]>(initial);
  const save = useEnvMutation(
    () =>
      api<EnvironmentVariable[]>('/environment-variables', {
        method: 'PUT',
        body: { variables: rows.filter((r) => r.name) },
      }),
    [['environment-variables']],
  );
  const update = (index: number, patch: Partial<EnvironmentVariable>) =>
    setRows((r) => r.map((row, i) => (i === index ? { ...row, ...patch } : row)));
  return (
    <form
      aria-label="Environment variables"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate(undefined);
      }}
    >
      <Stack gap="xs" maw={720}>
        {rows.length === 0 && <Text c="dimmed">No variable.</Text>}
        {rows.map((row, index) => (
          <Group key={index} align="end" wrap="nowrap">
            <TextInput
              label="Name"
              value={row.name}
              readOnly={!writable}
              onChange={(e) => update(index, { name: e.currentTarget.value })}
            />
            <PasswordInput
              label="Value"
              value={row.value}
              readOnly={!writable}
              onChange={(e) => update(index, { value: e.currentTarget.value })}
              w={320}
            />
            {writable && (
              <Button
                variant="default"
                onClick={() => setRows((r) => r.filter((_, i) => i !== index))}
                aria-label={`Remove variable ${row.name || index + 1}`}
              >
                Remove
              </Button>
            )}
          </Group>
        ))}
        <MutationError mutation={save} title="The variables were not saved" />
        {save.isSuccess && <Text role="status">Variables saved.</Text>}
        {writable && (
          <Group>
            <Button variant="default" onClick={() => setRows((r) => [...r, { name: '', value: '' }])}>
              Add variable
            </Button>
            <Button type="submit" loading={save.isPending}>
              Save variables
            </Button>
          </Group>
        )}
      </Stack>
    </form>
  );
}

interface ConsoleUser {
  id: string;
  email: string;
  role: Role;
  created_at: string;
  last_sign_in_at: string | null;
}
const ROLES: Role[] = ['admin', 'developer', 'viewer'];

function Users() {
  const { session } = useSession();
  const users = useEnvQuery(['console-users'], () =>
    api<{ users: ConsoleUser[] }>('/console/api/users', { environment: false }),
  );
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [password, setPassword] = useState('');
  const create = useEnvMutation(
    () => api('/console/api/users', { method: 'POST', environment: false, body: { email, role, password } }),
    [['console-users']],
    {
      onSuccess: () => {
        setEmail('');
        setPassword('');
      },
    },
  );
  const change = useEnvMutation(
    ({ id, role: next }: { id: string; role: Role }) =>
      api(`/console/api/users/${encodeURIComponent(id)}`, {
        method: 'PATCH',
        environment: false,
        body: { role: next },
      }),
    [['console-users']],
  );
  const remove = useEnvMutation(
    (id: string) =>
      api(`/console/api/users/${encodeURIComponent(id)}`, { method: 'DELETE', environment: false }),
    [['console-users']],
  );
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Console users
      </Title>
      <QueryState query={users} label="console users" empty="No user." isEmpty={(d) => d.users.length === 0}>
        {(data) => (
          <Table aria-label="Console users">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Email</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Last sign-in</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.users.map((user) => (
                <Table.Tr key={user.id}>
                  <Table.Td>{user.email}</Table.Td>
                  <Table.Td>
                    <NativeSelect
                      aria-label={`Role of ${user.email}`}
                      data={ROLES}
                      value={user.role}
                      disabled={user.id === session.user.id}
                      onChange={(e) => change.mutate({ id: user.id, role: e.currentTarget.value as Role })}
                    />
                  </Table.Td>
                  <Table.Td>
                    {user.last_sign_in_at ? new Date(user.last_sign_in_at).toLocaleString() : 'never'}
                  </Table.Td>
                  <Table.Td>
                    {user.id !== session.user.id && (
                      <Button
                        size="compact-xs"
                        color="red.9"
                        variant="outline"
                        aria-label={`Remove ${user.email}`}
                        onClick={() => {
                          if (window.confirm(`Remove ${user.email}?`)) remove.mutate(user.id);
                        }}
                      >
                        Remove
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </QueryState>
      <MutationError mutation={change} title="The role was not changed" />
      <MutationError mutation={remove} title="The user was not removed" />
      <form
        aria-label="New console user"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate(undefined);
        }}
      >
        <Group align="end">
          <TextInput
            label="Email"
            type="email"
            required
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
          />
          <NativeSelect
            label="Role"
            data={ROLES}
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as Role)}
          />
          <PasswordInput
            label="Initial password"
            required
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            autoComplete="new-password"
          />
          <Button type="submit" loading={create.isPending}>
            Add user
          </Button>
        </Group>
        <MutationError mutation={create} title="The user was not added" />
      </form>
    </Stack>
  );
}
