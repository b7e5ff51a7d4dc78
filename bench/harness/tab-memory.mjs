// The browser's memory while a bench runs, read from /proc (Linux): every process descended from this
// one (the Chromium that Playwright started), sampled every `intervalMs`. A page and its workers live
// in its renderer process (dedicated workers, the engine's wasm memory and its pthreads included), so
// the renderers' resident memory is the tab's; the whole browser adds the GPU, network and browser
// processes. Peaks are of the sum at each sample. Resident memory counts the shared libraries once per
// process: a few tens of MB more than the tab owns.
import { readFileSync, readdirSync } from 'node:fs';

// every process's parent: pid -> ppid
function parents() {
  const parent = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // the fields after the command's closing parenthesis: state, ppid, ...
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // the process ended between the listing and the read
    }
  }
  return parent;
}

function descendants(root) {
  const parent = parents();
  const out = [];
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid); p; p = parent.get(p))
      if (p === root) {
        out.push(pid);
        break;
      }
  }
  return out;
}

// a field of /proc/PID/status in bytes (0 when the process ended)
function statusBytes(pid, field) {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
const residentBytes = (pid) => statusBytes(pid, 'VmRSS');

const isRenderer = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer');
  } catch {
    return false;
  }
};

/**
 * Starts sampling; returns { stop(): { renderer_peak_bytes, browser_peak_bytes, samples,
 * renderers_at_peak } }: renderers_at_peak, each renderer process at the tab's peak sample, its
 * resident memory split as /proc says (anonymous: heaps, wasm memory, bitmaps; file: code and fonts
 * mapped; shared memory: what it shares with the GPU and browser processes).
 */
export function sampleBrowserMemory(intervalMs = 1000) {
  let rendererPeak = 0,
    browserPeak = 0,
    samples = 0,
    atPeak = [];
  const sample = () => {
    let renderer = 0,
      all = 0;
    const renderers = [];
    for (const pid of descendants(process.pid)) {
      const rss = residentBytes(pid);
      all += rss;
      if (isRenderer(pid)) {
        renderer += rss;
        renderers.push({
          pid,
          rss,
          anon: statusBytes(pid, 'RssAnon'),
          file: statusBytes(pid, 'RssFile'),
          shmem: statusBytes(pid, 'RssShmem'),
        });
      }
    }
    if (renderer > rendererPeak) atPeak = renderers;
    rendererPeak = Math.max(rendererPeak, renderer);
    browserPeak = Math.max(browserPeak, all);
    samples++;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { renderer_peak_bytes: rendererPeak, browser_peak_bytes: browserPeak, samples, renderers_at_peak: atPeak };
    },
  };
}
