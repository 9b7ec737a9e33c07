import {
  Button,
  Checkbox,
  Group,
  PasswordInput,
  Select,
  Stack,
  Text,
  Textarea,
  TextInput,
} from '@mantine/core';
import type { ApiProvider, Integration } from '@switchboard/contracts';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { api } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { ErrorAlert } from '../components/error-alert';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { credentialsFor, type ProviderShape } from './integration-fields';

/**
 * The fields of an integration's credentials, built from its provider's `auth_mode`. Secrets are
 * write-only: an edit leaves them empty, and the credentials are sent only when the user typed some.
 */
export function IntegrationFields({
  provider,
  values,
  onChange,
  editing,
}: {
  provider: ProviderShape;
  values: Record<string, string>;
  onChange(name: string, value: string): void;
  editing: boolean;
}) {
  const credentials = credentialsFor(provider);
  if (!credentials) {
    return (
      <Text size="sm" c="dimmed">
        {provider.auth_mode} integrations hold no credentials of their own: each connection brings its own.
      </Text>
    );
  }
  return (
    <Stack gap="sm">
      {credentials.fields.map((field) => {
        const common = {
          key: field.name,
          label: field.label,
          description:
            field.secret && editing ? 'Write-only: leave empty to keep the current value' : field.description,
          required: field.required && !editing,
          value: values[field.name] ?? '',
          onChange: (event: { currentTarget: { value: string } }) =>
            onChange(field.name, event.currentTarget.value),
          autoComplete: 'off',
          error: (values[field.name] && field.problem?.(values[field.name]!)) || undefined,
        };
        if (field.multiline) return <Textarea {...common} autosize minRows={3} />;
        if (field.secret) return <PasswordInput {...common} />;
        return <TextInput {...common} />;
      })}
    </Stack>
  );
}

/** Whether a typed credential is one the API would refuse for a reason the form can tell before sending. */
export function credentialsRefused(provider: ProviderShape, values: Record<string, string>): boolean {
  return (credentialsFor(provider)?.fields ?? []).some(
    (field) => !!values[field.name] && !!field.problem?.(values[field.name]!),
  );
}

/** The `credentials` object for the API, or undefined when nothing was typed (an edit keeps them). */
export function credentialsBody(
  provider: ProviderShape,
  values: Record<string, string>,
): Record<string, string> | undefined {
  const credentials = credentialsFor(provider);
  if (!credentials) return undefined;
  const filled = Object.fromEntries(
    credentials.fields.filter((f) => (values[f.name] ?? '') !== '').map((f) => [f.name, values[f.name]!]),
  );
  return Object.keys(filled).length ? { type: credentials.type, ...filled } : undefined;
}

export function NewIntegrationPage() {
  const navigate = useNavigate();
  const [provider, setProvider] = useState<string | null>(null);
  const [uniqueKey, setUniqueKey] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [forwardWebhooks, setForwardWebhooks] = useState(true);
  const [values, setValues] = useState<Record<string, string>>({});
  const providers = useEnvQuery(['providers'], () => api<{ data: ApiProvider[] }>('/providers'), {
    staleTime: Infinity,
  });
  const schema = useEnvQuery(
    ['providers', provider],
    () => api<{ data: ApiProvider }>(`/providers/${encodeURIComponent(provider!)}`),
    { enabled: provider !== null, staleTime: Infinity },
  );
  const create = useEnvMutation(
    () =>
      api<{ data: Integration }>('/integrations', {
        method: 'POST',
        body: {
          provider,
          unique_key: uniqueKey,
          ...(displayName ? { display_name: displayName } : {}),
          forward_webhooks: forwardWebhooks,
          credentials: schema.data ? credentialsBody(schema.data.data, values) : undefined,
        },
      }),
    [['integrations']],
    { onSuccess: (created) => navigate(`/integrations/${encodeURIComponent(created.data.unique_key)}`) },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (schema.data && credentialsRefused(schema.data.data, values)) return;
    create.mutate(undefined);
  };
  return (
    <Page title="New integration">
      {providers.isError && <ErrorAlert error={providers.error} title="Could not load the providers" />}
      <form onSubmit={submit} aria-label="New integration">
        <Stack maw={560}>
          <Select
            label="Provider"
            placeholder={providers.isPending ? 'Loading providers…' : 'Search a provider'}
            searchable
            required
            limit={50}
            data={(providers.data?.data ?? []).map((p) => ({
              value: p.name,
              label: `${p.display_name} (${p.name})`,
            }))}
            value={provider}
            onChange={(value) => {
              setProvider(value);
              if (value && !uniqueKey) setUniqueKey(value);
            }}
          />
          <TextInput
            label="Unique key"
            description="The key your code and connect links use for this integration"
            required
            value={uniqueKey}
            onChange={(e) => setUniqueKey(e.currentTarget.value)}
          />
          <TextInput
            label="Display name"
            value={displayName}
            onChange={(e) => setDisplayName(e.currentTarget.value)}
          />
          <Checkbox
            label="Forward the provider's webhooks to my webhook URL"
            checked={forwardWebhooks}
            onChange={(e) => setForwardWebhooks(e.currentTarget.checked)}
          />
          {schema.isError && <ErrorAlert error={schema.error} title="Could not load the provider" />}
          {schema.data && (
            <IntegrationFields
              provider={schema.data.data}
              values={values}
              onChange={(name, value) => setValues((v) => ({ ...v, [name]: value }))}
              editing={false}
            />
          )}
          <MutationError mutation={create} title="The integration was not created" />
          <Group>
            <Button type="submit" loading={create.isPending} disabled={!provider}>
              Create integration
            </Button>
          </Group>
        </Stack>
      </form>
    </Page>
  );
}
