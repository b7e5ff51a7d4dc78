// Internal to the kernel library: the thread pool the kernels split their work over.
//
// Determinism: work is cut by a fixed partition (parallel_for's chunk c of P covers [n*c/P, n*(c+1)/P)),
// and the kernels cut only along outputs (GEMM column panels, attention heads, LM-head rows, norm
// rows, blocks of an elementwise pass), never a sum. Each output element is then computed by one
// thread, by the same instructions in the same order as on one thread, so results are bit-identical
// for every thread count.
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
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace headscope::kernels {

class ThreadPool {
 public:
  // threads - 1 persistent workers; the calling thread is the last participant. threads <= 1: none.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  int size() const { return size_; }
  // fn(begin, end) on each of size() chunks of [0, n) (empty chunks skipped); returns when all ran.
  void run(int n, const std::function<void(int, int)>& fn);

 private:
  void work(int index);
  int size_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_n_ = 0;
  // atomics, so that a worker and the caller can spin on them before sleeping (parallel.cpp)
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
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
// A template so that the inline path (the one-token update's small products) builds no
// std::function; the pool gets a reference to fn, which fits std::function's inline buffer.
template <class F>
void parallel_for(int n, double work, F&& fn) {
  if (!worth_splitting(n, work)) {
    if (n > 0) fn(0, n);
    return;
  }
  run_on_current_pool(n, std::function<void(int, int)>(std::ref(fn)));
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
