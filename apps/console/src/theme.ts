import { createTheme, type CSSVariablesResolver } from '@mantine/core';

// Mantine's default palette, with a primary shade dark enough for WCAG AA text contrast on white.
export const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: 8,
  // Filled colours (badges, buttons) get black or white text, whichever contrasts more.
  autoContrast: true,
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
});

// Mantine's "dimmed" text (descriptions, hints) is gray.6, under 4.5:1 on white; gray.7 meets WCAG AA.
export const cssVariablesResolver: CSSVariablesResolver = (t) => ({
  variables: {},
  light: { '--mantine-color-dimmed': t.colors.gray[7]! },
  dark: {},
});
