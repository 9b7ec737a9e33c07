import { Button, Center, Divider, Paper, PasswordInput, Stack, TextInput, Title } from '@mantine/core';
import type { ConsoleConfig } from '@switchboard/contracts';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { api, setCsrfToken } from '../api/client';
import type { ConsoleSession } from '../api/session';
import { ErrorAlert } from '../components/error-alert';

/** Only a path of this app: never an absolute URL (an open redirect after sign-in). */
function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/integrations';
}

export function SignInPage() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const client = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  useEffect(() => {
    document.title = 'Sign in · Switchboard console';
  }, []);
  // Without an answer (yet, or at all) the page offers the password form only. Not the shell's
  // ['console', 'config'] (`/console/config.json`): another answer.
  const config = useQuery({
    queryKey: ['console', 'sign-in-options'],
    queryFn: () => api<ConsoleConfig>('/console/api/config', { environment: false }),
    staleTime: Infinity,
    retry: false,
  });
  const signIn = useMutation({
    mutationFn: () =>
      api<ConsoleSession>('/console/api/sign-in', {
        method: 'POST',
        body: { email, password },
        environment: false,
      }),
    onSuccess: async (session) => {
      setCsrfToken(session.csrf_token);
      client.clear();
      client.setQueryData(['console', 'me'], session);
      await navigate(safeNext(params.get('next')), { replace: true });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signIn.mutate();
  };
  return (
    <Center mih="100vh" p="md" component="main">
      <Paper withBorder shadow="sm" p="xl" w={380} component="form" onSubmit={submit} noValidate={false}>
        <Stack>
          <Title order={1} size="h3">
            Sign in to Switchboard
          </Title>
          {signIn.isError && <ErrorAlert error={signIn.error} title="Sign-in failed" />}
          <TextInput
            label="Email"
            type="email"
            autoComplete="username"
            required
            autoFocus
            value={email}
            onChange={(event) => setEmail(event.currentTarget.value)}
          />
          <PasswordInput
            label="Password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(event) => setPassword(event.currentTarget.value)}
          />
          <Button type="submit" loading={signIn.isPending}>
            Sign in
          </Button>
          {config.data?.oidc.enabled && (
            <>
              <Divider label="or" labelPosition="center" />
              {/* A full navigation: the gateway answers with a redirect to the identity provider. */}
              <Button component="a" href="/console/api/oidc/start" variant="default">
                {config.data.oidc.label}
              </Button>
            </>
          )}
        </Stack>
      </Paper>
    </Center>
  );
}
