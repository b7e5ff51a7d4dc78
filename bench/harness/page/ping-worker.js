// Echo worker: measures the page <-> worker message round trip (thread wake-up latency) alone.
self.onmessage = (e) => self.postMessage(e.data);
