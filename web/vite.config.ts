import { defineConfig } from 'vitest/config';

// kfaild serves dist/ at "/": index.html at "/", bundles at "/assets/<file>". A relative base keeps
// the URLs valid also when the dashboard sits behind a reverse proxy under a prefix.
export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    // `npm run dev` against a running kfaild (or e2e/mock-server.mjs): KFAILD_URL=http://127.0.0.1:8080
    proxy: { '/api': process.env.KFAILD_URL ?? 'http://127.0.0.1:8080' },
  },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
