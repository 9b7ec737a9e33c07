import { createTheme } from '@mantine/core';

// Mantine's default palette, with a primary shade dark enough for WCAG AA text contrast on white.
export const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: 8,
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
});
