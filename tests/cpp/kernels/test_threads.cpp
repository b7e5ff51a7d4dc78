// Threads (cpp/src/kernels/parallel.hpp): every kernel that splits its work, and the model and the
// trainer on top of them, give the same floats on any number of threads as on one. Tolerance 0: the
// work is split along outputs, never a sum, so each output is computed by the same
// instructions in the same order whatever range of outputs a thread is handed. The parallel threshold is set to 0
// here so that small shapes are split too, and the counts include more threads than units of work.
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <tuple>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/heads.hpp"
#include "headscope/model.hpp"
#include "headscope/train.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"
#include "model/model_memory.hpp"
#include "test_util.hpp"

namespace kn = headscope::kernels;
using headscope::Model;
using headscope::RunOptions;
using test_util::read_bytes;
using test_util::read_text;

using test_util::random_normal;

namespace {

// What a pool of `asked` threads has: natively that many (0: one per core), one in a wasm build
// without threads.
int expected_threads(int asked) {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  (void)asked;
  return 1;
#else
  return asked == 0 ? kn::hardware_threads() : asked;
#endif
}

struct SplitEverything {
  double previous = kn::set_min_parallel_work(0);
  ~SplitEverything() { kn::set_min_parallel_work(previous); }
};

// fn() run with no pool and with pools of 2, 3 and 7 threads: every result the same as without
template <class F>
void same_on_every_pool(F&& fn) {
  const auto want = fn();
  for (int threads : {2, 3, 7}) {
    kn::ThreadPool pool(threads);
    kn::PoolScope scope(&pool);
    INFO(threads << " threads");
    REQUIRE(kn::current_threads() == expected_threads(threads));
    REQUIRE(fn() == want);
  }
}

Model load_threaded(const std::string& dir, int threads) {
  headscope::LoadOptions o;
  o.threads = threads;
  return test_util::load_dir(dir, o);
}

}  // namespace

TEST_CASE("threads: the pool runs every index exactly once, in ranges of whole grains", "[threads]") {
  SplitEverything split;
  for (int threads : {1, 2, 3, 8})
    for (int grain : {1, 4})
      for (int n : {0, 1, 2, 5, 17, 100}) {
        kn::ThreadPool pool(threads);
        kn::PoolScope scope(&pool);
        std::vector<int> hits(n, 0), misaligned(n, 0);
        kn::parallel_for(
            n, 1.0,
            [&](int b, int e) {
              // each index belongs to one range: no data race
              for (int i = b; i < e; i++) hits[i]++;
              if (b % grain != 0 || (e % grain != 0 && e != n)) misaligned[b] = 1;
            },
            grain);
        INFO(threads << " threads, grain " << grain << ", n " << n);
        for (int h : hits) REQUIRE(h == 1);
        REQUIRE(std::count(misaligned.begin(), misaligned.end(), 1) == 0);
      }
}

// An exception thrown by the function on any thread, the caller's or a worker's, reaches the caller
// once every range has ended (a worker's used to end the process), and the pool runs the next call.
TEST_CASE("threads: an exception from any range reaches the caller, and the pool goes on", "[threads]") {
  SplitEverything split;
  for (int threads : {1, 2, 3})
    for (int thrower : {0, 3, 7}) {  // the first range (the caller's share), and ranges of the others' shares
      kn::ThreadPool pool(threads);
      kn::PoolScope scope(&pool);
      INFO(threads << " threads, index " << thrower << " throws");
      std::atomic<int> ran{0};
      REQUIRE_THROWS_WITH(kn::parallel_for(8, 1.0,
                                           [&](int b, int e) {
                                             ran += e - b;
                                             if (b <= thrower && thrower < e) throw headscope::Error("range failed");
                                           }),
                          "range failed");
      REQUIRE(ran.load() == 8);  // every range ran once, the one that threw included, before the call returned
      std::vector<int> hits(8, 0);
      kn::parallel_for(8, 1.0, [&](int b, int e) {
        for (int i = b; i < e; i++) hits[i]++;
      });
      REQUIRE(std::count(hits.begin(), hits.end(), 1) == 8);
    }
}

#if !defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__)
// A thread that stalls mid-call (on a 2-core machine: its core taken by another process) does not hold
// up the rest of its share: the other thread takes it. Here the first index of the second thread's
// share waits for every other index to be done. With a fixed partition that thread would own the
// indices it waits for and the wait would time out; with the pool's claiming, the other thread runs
// them. The bound (20 s) only turns a hang into a failure.
TEST_CASE("threads: a stalled thread's remaining work is taken by the others", "[threads]") {
  SplitEverything split;
  kn::ThreadPool pool(2);
  kn::PoolScope scope(&pool);
  constexpr int n = 8;  // 4 granules a thread: one index each
  std::mutex m;
  std::condition_variable cv;
  int done = 0;
  bool timed_out = false;
  kn::parallel_for(n, 1.0, [&](int b, int e) {
    for (int i = b; i < e; i++) {
      std::unique_lock<std::mutex> lock(m);
      if (i == n / 2) timed_out = !cv.wait_for(lock, std::chrono::seconds(20), [&] { return done == n - 1; });
      done++;
      cv.notify_all();
    }
  });
  REQUIRE_FALSE(timed_out);
  REQUIRE(done == n);
}
#endif

// A text's activations are zeroed over the pool (assign_zeros): every element of a reused buffer,
// which still holds the last text's values, reads 0, whether it shrank, stayed or grew past its
// capacity, on every pool; sizes around the elementwise block (4,096) and its multiples.
TEST_CASE("threads: assign_zeros leaves every element 0 on every pool", "[threads]") {
  SplitEverything split;
  for (int threads : {1, 2, 3})
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4097}, std::size_t{3 * 4096 + 5}}) {
      kn::ThreadPool pool(threads);
      kn::PoolScope scope(&pool);
      headscope::ActivationBuffer<float> v(3 * 4096 + 5, 7.0f);  // the last text's values
      for (std::size_t size : {n, n + 4096 * 4}) {               // within the capacity, then past it
        headscope::assign_zeros(v, size);
        INFO(threads << " threads, " << size << " elements");
        REQUIRE(v.size() == size);
        REQUIRE(std::count(v.begin(), v.end(), 0.0f) == (std::ptrdiff_t)size);
        std::fill(v.begin(), v.end(), -1.0f);  // dirty again for the next size
      }
    }
}

TEST_CASE("threads: split kernels equal one thread, bit for bit", "[threads][kernels]") {
  SplitEverything split;
  std::mt19937 rng(5);
  for (int T : {1, 5, 13})
    for (const auto& shape : {std::pair{7, 9}, std::pair{16, 33}, std::pair{40, 100}}) {
      const int K = shape.first, N = shape.second;  // not a structured binding: clang 14's lambdas cannot capture one
      INFO("T " << T << " K " << K << " N " << N);
      const auto inp = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)K * N, rng);
      const auto bias = random_normal(N, rng), dout = random_normal((std::size_t)T * N, rng);
      const kn::PackedLinear W = kn::pack_linear(w.data(), bias.data(), K, N);
      same_on_every_pool([&] {
        std::vector<float> out((std::size_t)T * N);
        kn::matmul_forward(out.data(), inp.data(), W, T);
        return out;
      });
      same_on_every_pool([&] {
        std::vector<float> out((std::size_t)T * N);
        kn::matmul_rows_forward(out.data(), inp.data(), K, W, 1, K - 1, T);
        return out;
      });
      // the 8-bit layer (q8.cpp): threads take whole panels as in the float GEMM
      const kn::PackedLinear Q = kn::pack_linear_q8(w.data(), bias.data(), K, N);
      same_on_every_pool([&] {
        std::vector<float> out((std::size_t)T * N);
        kn::matmul_forward(out.data(), inp.data(), Q, T);
        return out;
      });
      // the LM head: weight (N, K) rows; N not a multiple of its 4-row groups
      same_on_every_pool([&] {
        std::vector<float> out((std::size_t)T * N);
        kn::matmul_transposed_forward(out.data(), inp.data(), w.data(), T, K, N);
        return out;
      });
      // training's products: input and weight gradients, and the LM head's
      same_on_every_pool([&] {
        std::vector<float> dinp((std::size_t)T * K, 0.5f), dw((std::size_t)K * N, 0.25f), db(N, 0.0f);
        kn::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), T, K, N);
        dinp.insert(dinp.end(), dw.begin(), dw.end());
        return dinp;
      });
      same_on_every_pool([&] {
        std::vector<float> dinp((std::size_t)T * K, 0.5f), dw((std::size_t)N * K, 0.25f);
        kn::matmul_transposed_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), T, K, N);
        dinp.insert(dinp.end(), dw.begin(), dw.end());
        return dinp;
      });
    }
  // attention, forward and backward, over head counts that do and do not divide by the threads
  for (const auto& shape : {std::tuple{9, 12, 3}, std::tuple{17, 40, 5}}) {
    const int T = std::get<0>(shape), C = std::get<1>(shape), NH = std::get<2>(shape);
    INFO("attention T " << T << " C " << C << " NH " << NH);
    const auto qkv = random_normal((std::size_t)T * 3 * C, rng);
    same_on_every_pool([&] {
      std::vector<float> out((std::size_t)T * C), att((std::size_t)NH * T * T);
      std::vector<float> panels(kn::attention_key_panels_floats(T, C, NH));
      kn::attention_forward(out.data(), att.data(), qkv.data(), 0, T, C, NH, T, panels.data(), nullptr, -1);
      out.insert(out.end(), att.begin(), att.end());
      return out;
    });
    std::vector<float> att((std::size_t)NH * T * T), out((std::size_t)T * C);
    std::vector<float> panels(kn::attention_key_panels_floats(T, C, NH));
    kn::attention_forward(out.data(), att.data(), qkv.data(), 0, T, C, NH, T, panels.data(), nullptr, -1);
    const auto d = random_normal((std::size_t)T * C, rng);
    same_on_every_pool([&] {
      std::vector<float> dqkv((std::size_t)T * 3 * C, 0.0f), scratch(T);
      kn::attention_backward(dqkv.data(), scratch.data(), d.data(), qkv.data(), att.data(), 1, T, C, NH);
      return dqkv;
    });
  }
  // grouped-query attention: the key/value cache is filled per key/value head, then read by query
  // heads on other threads (multi-query: one key/value head, so its copy is not split at all)
  // Typing (one or two rows a call) takes the grouped path, split by key panels, query heads and blocks of value
  // columns: a head of 70 is several blocks (32 columns each) and a tail past the whole batches.
  for (const auto& gqa :
       {std::tuple{9, 4, 2, 6}, std::tuple{17, 6, 3, 5}, std::tuple{13, 4, 1, 8}, std::tuple{21, 6, 2, 70}}) {
    const int T = std::get<0>(gqa);
    const kn::AttentionShape s{std::get<1>(gqa), std::get<2>(gqa), std::get<3>(gqa)};
    INFO("grouped-query attention T " << T << " NH " << s.NH << " KV " << s.KV << " HS " << s.HS);
    const auto qkv = random_normal((std::size_t)T * s.qkv_row(), rng);
    for (int rows : {T, 1, 2}) {  // rows a call: all at once, then typing's one or two
      INFO(rows << " rows a call");
      same_on_every_pool([&] {
        std::vector<float> out((std::size_t)T * s.out_row()), att((std::size_t)s.NH * T * T);
        std::vector<float> panels(kn::attention_key_panels_floats(T, s));
        for (int t0 = 0; t0 < T; t0 += rows)
          kn::attention_forward(out.data(), att.data(), qkv.data(), t0, std::min(T, t0 + rows), s, T, panels.data(),
                                nullptr, -1);
        out.insert(out.end(), att.begin(), att.end());
        return out;
      });
    }
  }
}

TEST_CASE("threads: the model on 1, 2 and 3 threads gives the same results, typing and heads off included",
          "[threads][model]") {
  SplitEverything split;
  // GPT-2, and a grouped-query Llama-family model (rotary positions, RMSNorm, SwiGLU)
  for (const char* name : {"odd-hs12", "llama-gqa"}) {
    INFO(name);
    const std::string dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/" + name;
    const std::vector<int32_t> ids = {5, 17, 3, 99, 42, 7, 7, 18, 60, 2, 11, 30, 8};
    struct Out {
      std::vector<float> attention, logits, hidden, norms, values, inside_scores;
      bool operator==(const Out&) const = default;
    };
    const auto everything = [&](int threads) {
      Model m = load_threaded(dir, threads);
      REQUIRE(m.threads() == expected_threads(threads));
      RunOptions opt;
      opt.all_logits = true;
      opt.keep_contributions = true;
      opt.inspect = headscope::HeadRef{1, 2};
      m.run_ids(std::span(ids.data(), ids.size() - 4), opt);  // then typed: an incremental run
      m.run_ids(ids, opt);
      opt.ablate = {{1, 0}};  // then a head off: the layers below reused
      m.run_ids(ids, opt);
      return Out{m.attention_all(),      m.logits_all(),  m.hidden_states(),
                 m.contribution_norms(), m.value_norms(), m.head_inside().scores};
    };
    const Out one = everything(1);
    for (int threads : {2, 3}) REQUIRE(everything(threads) == one);
    // and the head measurement, whose gradients come from the trainer on the same threads (for the
    // grouped-query model through the key/value heads' partition of attention's backward)
    const auto measured = [&](int threads) {
      Model m = load_threaded(dir, threads);
      headscope::HeadsOptions o;
      o.random_orders = 1;
      const headscope::HeadsReport r = headscope::measure_heads(m, ids, o);
      std::vector<double> all = r.gate_grad;
      all.insert(all.end(), r.pruned_loss.begin(), r.pruned_loss.end());
      all.insert(all.end(), r.random_mean.begin(), r.random_mean.end());
      return all;
    };
    REQUIRE(measured(3) == measured(1));
  }
}

TEST_CASE("threads: training steps on 1 and 3 threads move the weights the same way", "[threads][train]") {
  SplitEverything split;
  // GPT-2, and grouped-query attention (two query heads write into each key/value head's gradient)
  // with Qwen3's q/k norms
  const std::string name = GENERATE(as<std::string>{}, "tiny-hs4", "llama-gqa", "qwen3-qknorm");
  INFO(name);
  const std::string dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/" + name;
  const Model m = load_threaded(dir, 1);
  const auto train = [&](int threads) {
    headscope::train::Trainer t(m.config(), 2, 8);
    t.set_threads(threads);
    REQUIRE(t.threads() == expected_threads(threads));
    t.load(m);
    std::vector<int> ids(16), targets(16);
    for (int i = 0; i < 16; i++) ids[i] = (i * 7) % 50, targets[i] = (i * 7 + 3) % 50;
    for (int step = 0; step < 3; step++) {
      t.zero_grad();
      t.forward(ids.data(), targets.data(), 2, 8);
      t.backward();
      t.adamw_step({});
    }
    return std::vector<float>(t.params().begin(), t.params().end());
  };
  REQUIRE(train(3) == train(1));
}

TEST_CASE("threads: a count out of range is an error naming the range", "[threads][errors]") {
  const std::string dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/tiny-hs4";
#if defined(__EMSCRIPTEN_PTHREADS__)
  {
    // the threaded wasm build runs threads only on the pthread workers made at load (none held
    // here): more is refused, with both counts, rather than waiting for a worker that cannot start
    const int available = kn::hardware_threads();
    REQUIRE(available > 1);
    REQUIRE_THROWS_WITH(kn::ThreadPool(available + 1),
                        Catch::Contains("asked for, but this engine has " + std::to_string(available)));
    REQUIRE_THROWS_WITH(load_threaded(dir, available + 1),
                        Catch::Contains("threads: " + std::to_string(available + 1)));
    REQUIRE(kn::hardware_threads() == available);  // nothing held by the refused pools
  }
#endif
  REQUIRE_THROWS_WITH(load_threaded(dir, -1), Catch::Contains("threads must be within [0, 256]"));
  REQUIRE_THROWS_WITH(load_threaded(dir, 257), Catch::Contains("got 257"));
  const Model m = load_threaded(dir, 1);
  headscope::train::Trainer t(m.config(), 1, 4);
  REQUIRE_THROWS_WITH(t.set_threads(-2), Catch::Contains("threads must be within"));
}
