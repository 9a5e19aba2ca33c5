"""Real-browser end-to-end tests (JupyterLab + Chromium + Playwright), run by `.ci/browser`."""
