// headscope: the native command-line tool.
//   headscope run --model DIR (--text "..." | --ids 3,17,5) [--json] [--top K] [--ablate L:H[,L:H...]] [--inspect L:H]
//                 [--weights f32|f16|q8|auto] [--threads N] [--no-maps] [--memory MB]
//   headscope info --model DIR [--weights f32|f16|q8|auto] [--no-maps] [--memory MB]
//   headscope bench --model DIR --tokens T [--repeat N] [--weights f32|f16|q8|auto] [--threads N] [--no-maps] [--memory
//   MB] headscope patch ... (patch_command.cpp)
// --weights f16 holds the large weight matrices in half precision (about half the memory); q8 the blocks'
// linear layers in 8 bits (about a quarter); auto as the checkpoint stores them (an F16 or BF16 file in
// half precision).
// --threads N splits each run over N threads (default 0: one per core); results are the same floats.
// --json prints exactly one JSON document on stdout (other tools rely on it, keep it stable):
//   {"tokens": [strings], "ids": [ints], "logits_last": [V floats], "attention": [L][H][T][T],
//    "dropped_tokens": int}, and with --inspect L:H also "inside": {"layer", "head", "q", "k", "v" ([T][HS]),
//    "scores" ([T][T], q_i.k_j/sqrt(HS), null where masked), "attention" ([T][T]), "z" ([T][HS]),
//    "out" ([T][C], the head's write through W_O), "value_norm" ([T], ||v_j W_O^h||)}
// bench prints one JSON line: {"tokens", "repeat", "load_ms", "forward_ms", "incremental_ms",
//   "forward_cpu_ms", "incremental_cpu_ms", "rss_after_load_mb", "peak_rss_mb", "weight_mb", "weights", "simd"};
//   forward_ms is the median full run of T tokens from an empty cache, incremental_ms the median one-token update at T
//   (T-1 tokens cached), *_cpu_ms the same in process CPU time, rss_after_load_mb VmRSS right after
//   loading, peak_rss_mb VmHWM at the end (the activations for T tokens included), weights the storage
//   ("f32"/"f16"/"q8").
// --ids runs token ids directly, without the tokenizer (the synthetic tasks of `headscope train` have
//   vocabularies that no text encodes to).
// Errors go to stderr with a non-zero exit code.
#include <iostream>
#include <string>

#include "accuracy_command.hpp"
#include "bench_command.hpp"
#include "generate_command.hpp"
#include "explain_command.hpp"
#include "heads_command.hpp"
#include "patch_command.hpp"
#include "model_args.hpp"
#include "report_errors.hpp"
#include "run_command.hpp"
#include "train_command.hpp"

namespace {

const char* kUsage =
    "usage:\n"
    "  headscope run --model DIR (--text TEXT | --ids ID,ID,...) [--json] [--top K] [--ablate L:H[,L:H...]]\n"
    "                [--inspect L:H] [--weights f32|f16|q8|auto] [--threads N] [--no-maps] [--memory MB]\n"
    "                [--activations all|views|auto]\n"
    "  headscope info --model DIR [--weights f32|f16|q8|auto] [--no-maps] [--memory MB] [--activations "
    "all|views|auto]\n"
    "  headscope bench --model DIR --tokens T [--repeat N] [--weights f32|f16|q8|auto] [--threads N] [--no-maps]\n"
    "                  [--memory MB] [--activations all|views|auto]\n"
    "  headscope train ... (headscope train --help)\n"
    "  headscope heads --model DIR --text-file F [--random-orders N] [--seed S] [--json] (headscope heads --help)\n"
    "  headscope generate --model DIR --text TEXT --tokens N [--temperature X] [--top-k K] [--top-p P] [--seed S] "
    "[--json]\n"
    "                     (headscope generate --help)\n"
    "  headscope patch --model DIR --clean TEXT --corrupted TEXT [--answer TOKEN] [--distractor TOKEN] "
    "[--by-position]\n"
    "                  [--json] (headscope patch --help)\n"
    "  headscope explain --model DIR --text TEXT --head L:H --query T --key S [--versus S2|mean] [--json]\n"
    "                    (headscope explain --help)\n"
    "  headscope circuits --model DIR [--seeds N] [--json] (headscope circuits --help)\n"
    "  headscope accuracy --model DIR --text-file F [--weights q8|f16] [--json] (headscope accuracy --help)\n"
    "DIR is a Hugging Face model folder: config.json, model.safetensors, and GPT-2's vocab.json + merges.txt\n"
    "or the Llama family's tokenizer.json.\n"
    "--weights f16 keeps the large weight matrices in half precision: about half the memory (default f32);\n"
    "q8 keeps the blocks' linear layers in 8 bits (inputs quantized per token): about a quarter.\n"
    "--threads N splits each run over N threads (default 0: one per core; run, bench, heads, generate, train).\n"
    "--no-maps keeps no attention map after a run: what reads one recomputes its rows from the key cache\n"
    "(the same numbers); memory grows with the text, not its square (run, info, bench).\n"
    "--memory MB caps the memory the model may use (default: this machine's); info says how it is spent.\n"
    "--activations views keeps only what the views read of a run (every layer's queries in F16 and key/value\n"
    "cache): about a third of the memory, the same logits, maps within F16's rounding of the queries, no\n"
    "--inspect; auto: all while they take a quarter\n"
    "of --memory, the views' past that (default all; run, info, bench).\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "train") return headscope::cli::train_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "heads") return headscope::cli::heads_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "generate") return headscope::cli::generate_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "patch") return headscope::cli::patch_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "accuracy") return headscope::cli::accuracy_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "explain") return headscope::cli::explain_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "circuits") return headscope::cli::circuits_command(argc, argv);
  return headscope::cli::report_errors(
      [&] {
        const headscope::cli::Args a = headscope::cli::parse_model_args(argc, argv);
        return a.command == "bench" ? headscope::cli::bench_command(a) : headscope::cli::run_command(a);
      },
      kUsage, {"missing command", "unknown"});
}
