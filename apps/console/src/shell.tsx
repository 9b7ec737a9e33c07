import {
  AppShell,
  Button,
  Center,
  Group,
  Loader,
  NavLink,
  NativeSelect,
  Text,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { NavLink as RouterNavLink, Outlet, useLocation, useNavigate } from 'react-router';
import type { Scope } from '@switchboard/contracts';
import { api, ApiError, setCsrfToken, setEnvironment, whenSessionLost } from './api/client';
import { SessionContext, type ConsoleSession, type SessionContextValue } from './api/session';
import { ErrorAlert } from './components/error-alert';

const ENVIRONMENT_KEY = 'switchboard.console.environment';

const NAV: { to: string; label: string; scope: Scope | null }[] = [
  { to: '/integrations', label: 'Integrations', scope: 'environment:integrations:read' },
  { to: '/connections', label: 'Connections', scope: 'environment:connections:read' },
  { to: '/functions', label: 'Functions', scope: 'environment:functions:read' },
  { to: '/webhooks', label: 'Webhooks', scope: 'environment:webhooks:read' },
  { to: '/settings', label: 'Settings', scope: null },
];

/** `GET /console/config.json`: what the gateway tells the console about its deployment. */
interface ConsoleConfig {
  trace_url: string | null;
}

/** The signed-in frame: who is signed in, the environment switch and the navigation. */
export function Shell() {
  const navigate = useNavigate();
  const location = useLocation();
  const client = useQueryClient();
  const me = useQuery({
    queryKey: ['console', 'me'],
    queryFn: () => api<ConsoleSession>('/console/api/me', { environment: false }),
    retry: false,
    staleTime: Infinity,
  });
  const config = useQuery({
    queryKey: ['console', 'config'],
    queryFn: () => api<ConsoleConfig>('/console/config.json', { environment: false }),
    retry: false,
    staleTime: Infinity,
  });
  const [environment, setEnvironmentState] = useState<string | null>(() =>
    localStorage.getItem(ENVIRONMENT_KEY),
  );

  const unauthenticated = me.error instanceof ApiError && me.error.status === 401;
  useEffect(() => {
    whenSessionLost(() => client.setQueryData(['console', 'me'], null));
  }, [client]);
  useEffect(() => {
    if (unauthenticated || me.data === null) {
      const next = location.pathname + location.search;
      void navigate(`/sign-in?next=${encodeURIComponent(next)}`, { replace: true });
    }
  }, [unauthenticated, me.data, location, navigate]);

  const session = me.data ?? null;
  const names = useMemo(() => session?.environments.map((e) => e.name) ?? [], [session]);
  const current = environment && names.includes(environment) ? environment : (names[0] ?? null);
  if (session) setCsrfToken(session.csrf_token);
  setEnvironment(current);

  const value = useMemo<SessionContextValue | null>(
    () =>
      session && current
        ? {
            session,
            environment: current,
            setEnvironment: (name: string) => {
              localStorage.setItem(ENVIRONMENT_KEY, name);
              setEnvironment(name);
              setEnvironmentState(name);
            },
            signOut: async () => {
              try {
                await api('/console/api/sign-out', { method: 'POST', environment: false });
              } catch {
                // Already ended (expired, or signed out elsewhere): the browser is signed out either way.
              } finally {
                setCsrfToken(null);
                client.clear();
                await navigate('/sign-in', { replace: true });
              }
            },
            can: (scope: Scope) => session.scopes.includes(scope),
            traceUrl: config.data?.trace_url ?? null,
          }
        : null,
    [session, current, client, navigate, config.data],
  );

  if (me.isError && !unauthenticated) {
    return (
      <Center p="xl">
        <ErrorAlert error={me.error} title="The console could not load" />
      </Center>
    );
  }
  if (!value) {
    if (session && !current) {
      return (
        <Center p="xl">
          <Text>This account has no environment yet.</Text>
        </Center>
      );
    }
    return (
      <Center p="xl" role="status">
        <Loader />
        <VisuallyHidden>Loading the console</VisuallyHidden>
      </Center>
    );
  }

  return (
    <SessionContext.Provider value={value}>
      <AppShell header={{ height: 60 }} navbar={{ width: 220, breakpoint: 'xs' }} padding="md">
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between" wrap="nowrap">
            <Title order={2} size="h4">
              Switchboard
            </Title>
            <Group gap="sm" wrap="nowrap">
              <NativeSelect
                aria-label="Environment"
                data={names}
                value={value.environment}
                onChange={(event) => value.setEnvironment(event.currentTarget.value)}
              />
              <Text size="sm" data-testid="signed-in-as">
                {value.session.user.email} ({value.session.user.role})
              </Text>
              <Button variant="default" onClick={() => void value.signOut()}>
                Sign out
              </Button>
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs" component="nav" aria-label="Main">
          {NAV.filter((item) => item.scope === null || value.can(item.scope)).map((item) => (
            <NavLink
              key={item.to}
              component={RouterNavLink}
              to={item.to}
              label={item.label}
              active={location.pathname.startsWith(item.to)}
              variant="filled"
            />
          ))}
        </AppShell.Navbar>
        <AppShell.Main>
          <Outlet />
        </AppShell.Main>
      </AppShell>
    </SessionContext.Provider>
  );
}
