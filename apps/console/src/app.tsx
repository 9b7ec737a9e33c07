import { createBrowserRouter, Navigate, RouterProvider } from 'react-router';
import { RouteError } from './components/route-error';
import { Shell } from './shell';
import { SignInPage } from './pages/sign-in';

// Each page is its own chunk: the first load carries the shell and the sign-in page only.
const router = createBrowserRouter(
  [
    { path: '/sign-in', element: <SignInPage /> },
    {
      path: '/',
      element: <Shell />,
      children: [
        {
          errorElement: <RouteError />,
          children: [
            { index: true, element: <Navigate to="/integrations" replace /> },
            {
              path: 'integrations',
              lazy: async () => ({ Component: (await import('./pages/integrations')).IntegrationsPage }),
            },
            {
              path: 'integrations/new',
              lazy: async () => ({
                Component: (await import('./pages/integration-form')).NewIntegrationPage,
              }),
            },
            {
              path: 'integrations/:uniqueKey',
              lazy: async () => ({ Component: (await import('./pages/integration')).IntegrationPage }),
            },
            {
              path: 'connections',
              lazy: async () => ({ Component: (await import('./pages/connections')).ConnectionsPage }),
            },
            {
              path: 'connections/:integration/:connectionId',
              lazy: async () => ({ Component: (await import('./pages/connection')).ConnectionPage }),
            },
            {
              path: 'functions',
              lazy: async () => ({ Component: (await import('./pages/functions')).FunctionsPage }),
            },
            {
              path: 'webhooks',
              lazy: async () => ({ Component: (await import('./pages/webhooks')).WebhooksPage }),
            },
            {
              path: 'settings',
              lazy: async () => ({ Component: (await import('./pages/settings')).SettingsPage }),
            },
            {
              path: 'settings/audit',
              lazy: async () => ({ Component: (await import('./pages/audit')).AuditPage }),
            },
            { path: '*', element: <Navigate to="/integrations" replace /> },
          ],
        },
      ],
    },
  ],
  { basename: '/console' },
);

export function App() {
  return <RouterProvider router={router} />;
}
