import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// `vite build web` (npm run build): the panel into dist/web, which Aerie serves at `/`
// (src/http/panel.ts). Hashed file names under assets/ let Aerie cache them for a year.
export default defineConfig(({ command }) => {
  // A build is always React's production build, whatever NODE_ENV the caller runs with (vitest
  // sets it to `test`, and a test may run `npm run build`). Vite reads it after this function.
  if (command === 'build') process.env.NODE_ENV = 'production';
  return {
    plugins: [react()],
    base: '/',
    build: {
      outDir: '../dist/web',
      emptyOutDir: true,
      assetsDir: 'assets',
      // Every asset is a file of its own: nothing is inlined as a data: URL.
      assetsInlineLimit: 0,
      sourcemap: false,
      target: 'es2022',
    },
    server: {
      // `npx vite web` during development: the API of an `npm run dev -- serve` on port 8080.
      proxy: {
        '/api': 'http://127.0.0.1:8080',
        '/auth': 'http://127.0.0.1:8080',
        '/download': 'http://127.0.0.1:8080',
      },
    },
  };
});
