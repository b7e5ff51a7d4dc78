// Prints one line after every other reporter: how many tests passed, failed, were skipped or
// flaky (failed, then passed on the retry: named, as a bug to find), which ones failed or were flaky,
// and how long the run took. It is the run's last line, so logs and
// scripts/test.sh show the outcome without scrolling.
export default class SummaryReporter {
  printsToStdio() {
    return true;
  }

  onBegin(config, suite) {
    this.suite = suite;
  }

  onEnd(result) {
    const counts = { passed: 0, failed: 0, flaky: 0, skipped: 0 };
    const failed = [];
    const flaky = [];
    for (const t of this.suite.allTests()) {
      const outcome = t.outcome();
      if (outcome === 'expected') counts[t.results.at(-1)?.status === 'skipped' ? 'skipped' : 'passed']++;
      else if (outcome === 'skipped') counts.skipped++;
      else if (outcome === 'flaky') {
        counts.flaky++;
        flaky.push(t.title);
      } else {
        counts.failed++;
        failed.push(t.title);
      }
    }
    const parts = Object.entries(counts)
      .filter(([k, n]) => n > 0 || k === 'passed' || k === 'failed')
      .map(([k, n]) => `${n} ${k}`);
    const quoted = (titles) => titles.map((t) => `"${t}"`).join(', ');
    const names =
      (failed.length ? ` (failed: ${quoted(failed)})` : '') + (flaky.length ? ` (flaky: ${quoted(flaky)})` : '');
    console.log(
      `headscope e2e: ${result.status}, ${parts.join(', ')}${names} in ${(result.duration / 1000).toFixed(0)} s`,
    );
  }
}
