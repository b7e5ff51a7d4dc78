// Internal to the kernel library: the thread pool the kernels split their work over.
//
// Determinism: the kernels cut their work only along outputs (GEMM column panels, attention heads,
// LM-head rows, norm rows, blocks of an elementwise pass), never a sum, and compute each output of a
// range [begin, end) by the same instructions in the same order whatever the range. Results are then
// bit-identical for every thread count, and whichever thread runs a range.
//
// Scheduling: a call's [0, n) is cut into granules (a few per thread, parallel.cpp). Each thread owns
// the granules of its fixed share, [n*i/P, n*(i+1)/P), and runs them from the front; a thread that
// runs out takes the others' remaining granules from the back. Undisturbed, each thread runs its own
// share, as a static partition would; when a thread loses its core to another process (on a 2-core
// machine, the page's own thread), the others take its work instead of waiting for it.
//
// The pool is not passed through the kernels' signatures: a Model or Trainer makes its pool current
// for the duration of a call (PoolScope), and parallel_for() uses the calling thread's current pool,
// or runs inline when there is none (inside a worker, or a caller without a pool).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace headscope::kernels {

class ThreadPool {
 public:
  // threads - 1 persistent workers; the calling thread takes part as thread 0. threads <= 1: none.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  int size() const { return size_; }
  // fn(begin, end) over disjoint non-empty ranges covering [0, n), on any of the threads; returns
  // when all ran. An exception from fn (on any thread) is rethrown here once every range has ended.
  void run(int n, const std::function<void(int, int)>& fn);

 private:
  struct Job {
    const std::function<void(int, int)>* fn = nullptr;
    int n = 0, granules = 0;
    uint32_t tag = 0;  // the call's generation, in every range word of the call
  };
  void work(int index);
  void take_part(int index, const Job& job);  // index 0: the caller
  void run_granule(const Job& job, int g, bool on_caller);
  int size_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Job job_;  // written under mutex_ before generation_ moves
  // Thread i's remaining granules [front, back) and the call's tag in one word, claimed by
  // compare-and-swap: the owner from the front, the others from the back. A thread still holding an
  // old call's tag claims nothing from a new call. One cache line each.
  struct alignas(64) Range {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Range[]> ranges_;
  // atomics, so that a worker and the caller can spin on them before sleeping (parallel.cpp)
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> granules_done_{0};
  std::exception_ptr error_;  // the call's first exception from fn (under mutex_)
  bool stop_ = false;
  // who sleeps on wake_ and done_ (under mutex_): a wake-up is sent only to a thread that sleeps, as
  // one costs a futex call even with no waiter (in wasm Atomics.notify through emscripten's futex)
  int sleeping_workers_ = 0;
  bool caller_sleeping_ = false;
};

// The threads this machine offers (std::thread::hardware_concurrency, at least 1); 1 in a wasm build
// without threads; in the threaded wasm build, the idle pthread workers and the calling thread (a
// pool cannot have more there: ThreadPool refuses it).
int hardware_threads();

// Makes `pool` the current thread's pool until destroyed (null: none).
class PoolScope {
 public:
  explicit PoolScope(ThreadPool* pool);
  ~PoolScope();
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;

 private:
  ThreadPool* previous_;
};

// Threads of the current pool (1 without one).
int current_threads();

// True when parallel_for(n, work, ...) hands work to the current pool.
bool worth_splitting(int n, double work);
// Runs fn over [0, n) on the current pool (parallel_for's slow path).
void run_on_current_pool(int n, const std::function<void(int, int)>& fn);

// fn(begin, end) over [0, n) split by the current pool, or fn(0, n) inline when there is no pool,
// n < 2, or `work` (about the multiply-adds of the whole call) is below what a hand-off costs.
// grain: every range but the last holds a multiple of it (a kernel whose fastest loop takes several
// units at a time, as the GEMM's one-row loop takes 4 panels, keeps it on every range).
// A template so that the inline path (the one-token update's small products) builds no
// std::function; the pool gets a reference to fn, which fits std::function's inline buffer.
template <class F>
void parallel_for(int n, double work, F&& fn, int grain = 1) {
  if (!worth_splitting(n, work)) {
    if (n > 0) fn(0, n);
    return;
  }
  if (grain <= 1) return run_on_current_pool(n, std::function<void(int, int)>(std::ref(fn)));
  const auto in_grains = [&](int g_begin, int g_end) { fn(g_begin * grain, std::min(n, g_end * grain)); };
  run_on_current_pool((n + grain - 1) / grain, std::function<void(int, int)>(std::cref(in_grains)));
}

// An elementwise pass over N floats split over the current pool: fn(i, n) on [i, i + n), in blocks
// of kElementBlock floats (a multiple of every batch width, so an element goes through the same
// instructions on any thread count; only the last block holds a tail). cost: about the multiply-adds
// an element is worth (parallel_for's `work`), so that a one-token update's passes stay inline.
constexpr std::size_t kElementBlock = 4096;
template <class F>
void parallel_elements(std::size_t N, double cost, F&& fn) {
  const int blocks = (int)((N + kElementBlock - 1) / kElementBlock);
  parallel_for(blocks, cost * (double)N, [&](int b0, int b1) {
    const std::size_t i0 = (std::size_t)b0 * kElementBlock, i1 = std::min(N, (std::size_t)b1 * kElementBlock);
    fn(i0, i1 - i0);
  });
}

// For tests: the work below which parallel_for runs inline (0 splits every call, so tiny fixture
// models exercise the partition too). Returns the previous value.
double set_min_parallel_work(double work);

}  // namespace headscope::kernels
