// Headless Chromium as the benches, the screenshots and the tests launch it: Debian's /usr/bin/chromium
// (or $CHROMIUM) with the flags it needs here. Playwright gives each launch a fresh temporary profile
// (--user-data-dir); without the networking flags Chromium tries to reach outside hosts and stalls
// (cpp/README.md, "Toolchain notes" 12).
//   chromiumLaunchOptions(): the options for playwright's chromium.launch() (or a config's launchOptions)
//   launchChromium(extraArgs): playwright-core's chromium, launched with them and extraArgs (imported on
//     first use, so that a script's --help works without playwright-core)

export const CHROMIUM_ARGS = Object.freeze([
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]);

export function chromiumLaunchOptions(extraArgs = []) {
  return { executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: [...CHROMIUM_ARGS, ...extraArgs] };
}

export async function launchChromium(extraArgs = []) {
  const { chromium } = await import('playwright-core');
  return chromium.launch(chromiumLaunchOptions(extraArgs));
}
