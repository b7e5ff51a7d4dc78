// The kernels' thread pool (parallel.hpp): persistent workers woken per call, the caller taking part.
#include "parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

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

// chunk c of `parts` over [0, n)
inline int chunk_begin(int n, int c, int parts) { return (int)((int64_t)n * c / parts); }

// Before sleeping, a worker waits this many checks for the next call, and the caller as many for the
// workers to finish: a one-token update of GPT-2 small makes some 60 calls, microseconds apart, and
// waking a sleeping thread costs tens of microseconds (in wasm a futex through the browser's
// Atomics.wait and notify), which took 10 to 15 ms of its 64 in the page's threaded build
// (bench/README.md, "Long texts in the page"). About 20-60 us of checks; past them the thread sleeps.
constexpr int kSpins = 20000;
template <class Done>
void spin_until(Done done) {
  for (int i = 0; i < kSpins && !done(); i++) {
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
#if HEADSCOPE_THREADS
  size_ = std::max(1, threads);
#if defined(__EMSCRIPTEN_PTHREADS__)
  if (size_ > hardware_threads())
    throw std::runtime_error("threads: " + std::to_string(size_) + " asked for, but this engine has " +
                             std::to_string(hardware_threads()) + " (its pool of workers is made when it loads)");
#endif
  try {
    for (int i = 1; i < size_; i++) workers_.emplace_back([this, i] { work(i); });
  } catch (...) {  // a thread that could not start: stop the ones that did (a joinable thread must not be destroyed)
    stop_ = true;
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
    const std::function<void(int, int)>* job;
    int n;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto woken = [&] { return stop_ || generation_.load() != seen; };
      if (!woken()) {
        sleeping_workers_++;
        wake_.wait(lock, woken);
        sleeping_workers_--;
      }
      if (stop_) return;
      seen = generation_.load();
      job = job_;
      n = job_n_;
    }
    const int b = chunk_begin(n, index, size_), e = chunk_begin(n, index + 1, size_);
    if (b < e) (*job)(b, e);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // under the lock, so that a caller between its check and its wait does not miss it
      std::lock_guard<std::mutex> lock(mutex_);
      if (caller_sleeping_) done_.notify_one();
    }
  }
}

void ThreadPool::run(int n, const std::function<void(int, int)>& fn) {
  if (size_ == 1 || n < 2) {
    if (n > 0) fn(0, n);
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_ = size_ - 1;
    generation_++;
    wake = sleeping_workers_ > 0;  // the others still spin on generation_ and see it
  }
  if (wake) wake_.notify_all();
  // the caller takes chunk 0; a worker's chunk never runs on the caller, so which thread computes an
  // output depends only on the partition
  const int e = chunk_begin(n, 1, size_);
  if (e > 0) {
    // the workers' kernels must not hand off again: they have no current pool of their own
    ThreadPool* mine = t_current;
    t_current = nullptr;
    fn(0, e);
    t_current = mine;
  }
  spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  if (pending_.load() != 0) {
    caller_sleeping_ = true;
    done_.wait(lock, [&] { return pending_.load() == 0; });
    caller_sleeping_ = false;
  }
  job_ = nullptr;
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
