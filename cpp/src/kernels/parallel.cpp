// The kernels' thread pool (parallel.hpp): persistent workers woken per call, the caller taking part.
#include "parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define HEADSCOPE_THREADS 0  // the single-threaded wasm build: std::thread cannot start
#else
#define HEADSCOPE_THREADS 1
#endif

#if defined(__EMSCRIPTEN_PTHREADS__)
#include <emscripten.h>
// The pthread workers that are loaded and idle. A wasm thread runs only on a worker made before the
// thread that starts it waits (the page's loader sizes the pool, web/lib/wasm.js), so the threads
// available are these plus the calling one.
EM_JS(int, headscope_idle_workers, (), { return PThread.unusedWorkers.length; });
#endif

namespace headscope::kernels {

namespace {
thread_local ThreadPool* t_current = nullptr;

// Below this many multiply-adds a call runs inline: waking a worker and waiting for it costs some
// 10-30 us, about a million multiply-adds of one core's SIMD (the one-token update of a small
// model is far below it, GPT-2 small's products above).
double g_min_parallel_work = 1 << 20;

// Granules a thread's share of a call is cut into. More of them balance better when a thread loses its
// core (a granule is the most one thread can hold the others up by) but cost more: each is one call
// of the kernel's function, and the GEMM's panels cut into more pieces pass over their inputs more
// often. 2, 4 and 8 were measured (bench/README.md, "Long texts in the page", the first run).
constexpr int kGranulesPerThread = 4;

// a range is claimed by compare-and-swap on one word: a lock instead (a build without 64-bit atomics)
// would serialize every claim
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// a range word: the call's tag (its generation's low 32 bits: a thread would have to sleep through 2^32
// calls to mistake an old call for a new one), then [front, back) in granules (at most 0xFFFF)
inline uint64_t range_word(uint32_t tag, int front, int back) {
  return (uint64_t)tag << 32 | (uint64_t)front << 16 | (uint64_t)back;
}
inline uint32_t tag_of(uint64_t w) { return (uint32_t)(w >> 32); }
inline int front_of(uint64_t w) { return (int)(w >> 16 & 0xFFFF); }
inline int back_of(uint64_t w) { return (int)(w & 0xFFFF); }

// where share i of `parts` equal shares of [0, n) begins
inline int share_begin(int n, int i, int parts) { return (int)((int64_t)n * i / parts); }

// Before sleeping, a worker waits this many checks for the next call, and the caller as many for the
// workers to finish: a one-token update of GPT-2 small makes some 60 calls, microseconds apart, and
// waking a sleeping thread costs tens of microseconds (in wasm a futex through the browser's
// Atomics.wait and notify), which took 10 to 15 ms of its 64 in the page's threaded build
// (bench/README.md, "Long texts in the page"). About 20-60 us of checks natively; past them the thread
// sleeps. In the threaded wasm build five times as many: there a sleeping thread's wake-up costs far
// more than natively, and with 20,000 checks a typed word on SmolLM2-135M's shape at 2,000 tokens took
// 93 ms in a Chromium worker on 2 threads against 77 on one (the pool's calls made serial); with
// 100,000 it took 54, with 400,000 58 and 1,500,000 50 (one round each, within this VM's spread).
#if defined(__EMSCRIPTEN_PTHREADS__)
constexpr int kSpins = 100000;
#else
constexpr int kSpins = 20000;
#endif
template <class Done>
void spin_until(Done done) {
  for (int i = 0; i < kSpins && !done(); i++) {
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
#if HEADSCOPE_THREADS
  size_ = std::max(1, threads);
  ranges_ = std::make_unique<Range[]>(size_);
#if defined(__EMSCRIPTEN_PTHREADS__)
  if (size_ > hardware_threads())
    throw std::runtime_error("threads: " + std::to_string(size_) + " asked for, but this engine has " +
                             std::to_string(hardware_threads()) + " (its pool of workers is made when it loads)");
#endif
  try {
    for (int i = 1; i < size_; i++) workers_.emplace_back([this, i] { work(i); });
  } catch (...) {  // a thread that could not start: stop the ones that did (a joinable thread must not be destroyed)
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
    throw;
  }
#else
  (void)threads;
#endif
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto woken = [&] { return stop_ || generation_.load() != seen; };
      if (!woken()) {
        sleeping_workers_++;
        wake_.wait(lock, woken);
        sleeping_workers_--;
      }
      if (stop_) return;
      // the newest call: one missed while asleep is over (its granules were taken by the others)
      seen = generation_.load();
      job = job_;
    }
    take_part(index, job);
  }
}

void ThreadPool::run_granule(const Job& job, int g, bool on_caller) {
  // an exception is kept for the caller, and the granule still counts as ended: the caller must not
  // return while another thread may still run the call's fn, and a worker must not end the process
  try {
    (*job.fn)(share_begin(job.n, g, job.granules), share_begin(job.n, g + 1, job.granules));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  if (granules_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.granules && !on_caller) {
    // under the lock, so that a caller between its check and its wait does not miss it
    std::lock_guard<std::mutex> lock(mutex_);
    if (caller_sleeping_) done_.notify_one();
  }
}

void ThreadPool::take_part(int index, const Job& job) {
  // claims granule front (own) or back - 1 (another's) of thread i's range while it holds the call's tag
  const auto claim = [&](int i, bool own) {
    std::atomic<uint64_t>& word = ranges_[i].word;
    uint64_t w = word.load(std::memory_order_acquire);
    for (;;) {
      const int front = front_of(w), back = back_of(w);
      if (tag_of(w) != job.tag || front >= back) return -1;
      const uint64_t next = own ? range_word(job.tag, front + 1, back) : range_word(job.tag, front, back - 1);
      if (word.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire))
        return own ? front : back - 1;
    }
  };
  for (int g; (g = claim(index, true)) >= 0;) run_granule(job, g, index == 0);
  // a range only shrinks, so one pass over the others leaves none
  for (int k = 1; k < size_; k++)
    for (int g, victim = (index + k) % size_; (g = claim(victim, false)) >= 0;) run_granule(job, g, index == 0);
}

void ThreadPool::run(int n, const std::function<void(int, int)>& fn) {
  if (size_ == 1 || n < 2) {
    if (n > 0) fn(0, n);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.granules = std::min({n, size_ * kGranulesPerThread, 0xFFFF});
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job.tag = (uint32_t)(generation_.load() + 1);
    for (int i = 0; i < size_; i++)
      ranges_[i].word.store(
          range_word(job.tag, share_begin(job.granules, i, size_), share_begin(job.granules, i + 1, size_)),
          std::memory_order_relaxed);
    granules_done_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    job_ = job;
    generation_++;
    wake = sleeping_workers_ > 0;  // the others still spin on generation_ and see it
  }
  if (wake) wake_.notify_all();
  // the caller takes part as thread 0; the kernels it runs must not hand off again (a worker has no
  // current pool of its own, and neither has the caller meanwhile)
  ThreadPool* mine = t_current;
  t_current = nullptr;
  take_part(0, job);
  t_current = mine;
  // every granule done, not every worker back: a worker that has not woken yet finds nothing left
  // to claim, and the caller does not wait for it
  spin_until([&] { return granules_done_.load(std::memory_order_acquire) == job.granules; });
  std::unique_lock<std::mutex> lock(mutex_);
  if (granules_done_.load() != job.granules) {
    caller_sleeping_ = true;
    done_.wait(lock, [&] { return granules_done_.load() == job.granules; });
    caller_sleeping_ = false;
  }
  job_.fn = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

int hardware_threads() {
#if defined(__EMSCRIPTEN_PTHREADS__)
  return 1 + headscope_idle_workers();
#elif HEADSCOPE_THREADS
  return std::max(1, (int)std::thread::hardware_concurrency());
#else
  return 1;
#endif
}

PoolScope::PoolScope(ThreadPool* pool) : previous_(t_current) { t_current = pool; }
PoolScope::~PoolScope() { t_current = previous_; }

double set_min_parallel_work(double work) {
  const double previous = g_min_parallel_work;
  g_min_parallel_work = work;
  return previous;
}

int current_threads() { return t_current ? t_current->size() : 1; }

bool worth_splitting(int n, double work) {
  return t_current && t_current->size() > 1 && n >= 2 && work >= g_min_parallel_work;
}

void run_on_current_pool(int n, const std::function<void(int, int)>& fn) { t_current->run(n, fn); }

}  // namespace headscope::kernels
