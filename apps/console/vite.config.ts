import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the gateway under /console: every asset URL is absolute from there, hashed, and loaded from
// the same origin (the gateway's CSP allows nothing else).
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    manifest: true,
    // No inline module preload polyfill: the CSP refuses inline scripts and modern browsers need none.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
  server: {
    // `pnpm dev` against a gateway on :3003 (same-origin cookies through the dev server's proxy).
    proxy: {
      '^/(?!console/|@|src/|node_modules/).*': 'http://127.0.0.1:3003',
      '/console/api': 'http://127.0.0.1:3003',
    },
  },
});
