// SPDX-License-Identifier: AGPL-3.0-or-later
// The admin page is served by the gateway under /admin from web/dist.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/admin/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2020', sourcemap: false },
});
