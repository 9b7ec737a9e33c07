import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const GATEWAY = 'http://127.0.0.1:3003';

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
    // `pnpm dev` in front of a gateway on 127.0.0.1:3003: the API (and /console/api, /console/config.json) is
    // forwarded with the gateway's own Origin, which the gateway requires of a cookie-authenticated write.
    proxy: {
      '^/(?!console/(?!api/|config\\.json)|@|src/|node_modules/).*': {
        target: GATEWAY,
        headers: { origin: GATEWAY },
      },
    },
  },
});
