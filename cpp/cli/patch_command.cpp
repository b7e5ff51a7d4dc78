// headscope patch: which heads carry an answer, by activation patching and attribution patching
// between a clean and a corrupted text (patch_texts, headscope/patching.hpp, where every number is
// defined). --json prints one document on stdout:
//   {"tokens_clean": [{"text", "id"}], "tokens_corrupted": [...], "first_difference": d,
//    "answer": {"id", "text"}, "distractor": {"id", "text"}, "ld_clean": x, "ld_corrupted": x,
//    "heads": [L][H], "heads_attribution": [L][H], "resid": [L][T]
//    (with --by-position also "heads_by_position" and "heads_by_position_attribution": [L][H][T])}
// Without --json, the heads' scores as a table. Progress goes to stderr when it is a terminal.
#include "patch_command.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "options.hpp"
#include "report_errors.hpp"

namespace headscope::cli {
namespace {

const char* kPatchUsage =
    "usage: headscope patch --model DIR --clean TEXT --corrupted TEXT [--answer TOKEN] [--distractor TOKEN]\n"
    "                       [--by-position] [--weights f32|f16|q8|auto] [--threads N] [--json]\n"
    "  Runs the corrupted text with each head's output (and each residual stream position) taken from\n"
    "  the clean run, and scores how much of the logit difference answer - distractor at the last\n"
    "  position comes back: 1 all of it, 0 none. The two texts must have the same number of tokens.\n"
    "  The answer and distractor (each exactly one token, e.g. \" Mary\") default to the clean and the\n"
    "  corrupted runs' most likely next tokens. The attribution estimate comes from one backward pass.\n";

struct PatchArgs {
  std::string model, clean, corrupted, answer, distractor;
  bool have_clean = false, have_corrupted = false, by_position = false, json = false;
  LoadOptions load;
};

PatchArgs parse(int argc, char** argv) {
  PatchArgs a;
  parse_options(argc, argv, a.model, a.json, a.load, [&](const std::string& arg, const auto& value) {
    if (arg == "--clean")
      a.clean = value(), a.have_clean = true;
    else if (arg == "--corrupted")
      a.corrupted = value(), a.have_corrupted = true;
    else if (arg == "--answer")
      a.answer = value();
    else if (arg == "--distractor")
      a.distractor = value();
    else if (arg == "--by-position")
      a.by_position = true;
    else
      return false;
    return true;
  });
  if (a.model.empty()) throw Error("--model DIR is required");
  if (!a.have_clean || !a.have_corrupted) throw Error("--clean TEXT and --corrupted TEXT are required");
  return a;
}

// (L, NH) or (L, n) rows
nlohmann::json rows(const std::vector<double>& v, int rows_n, int row_size) {
  nlohmann::json out = nlohmann::json::array();
  for (int r = 0; r < rows_n; r++)
    out.push_back(std::vector<double>(v.begin() + r * row_size, v.begin() + (r + 1) * row_size));
  return out;
}

int run_patch(const PatchArgs& a) {
  Model model = Model::load_directory(a.model, a.load);
  PatchOptions options;
  options.by_position = a.by_position;
  if (!a.answer.empty()) options.answer = single_token_id(model, a.answer);
  if (!a.distractor.empty()) options.distractor = single_token_id(model, a.distractor);
  TerminalProgress progress("patch");
  options.progress = progress.callback();
  const PatchReport r = patch_texts(model, a.clean, a.corrupted, options);
  progress.done();
  const int L = r.n_layer, NH = r.n_head, T = r.tokens;
  const Tokenizer& tok = model.tokenizer();
  if (a.json) {
    nlohmann::json j;
    for (const auto& [name, ids] :
         {std::pair{"tokens_clean", &r.ids_clean}, std::pair{"tokens_corrupted", &r.ids_corrupted}}) {
      j[name] = nlohmann::json::array();
      for (int32_t id : *ids) j[name].push_back({{"text", tok.token_display(id)}, {"id", id}});
    }
    j["first_difference"] = r.first_difference;
    j["answer"] = {{"id", r.answer}, {"text", tok.token_display(r.answer)}};
    j["distractor"] = {{"id", r.distractor}, {"text", tok.token_display(r.distractor)}};
    j["ld_clean"] = r.ld_clean;
    j["ld_corrupted"] = r.ld_corrupted;
    j["heads"] = rows(r.heads, L, NH);
    j["heads_attribution"] = rows(r.heads_attribution, L, NH);
    j["resid"] = rows(r.resid, L, T);
    if (a.by_position) {
      j["heads_by_position"] = nlohmann::json::array();
      j["heads_by_position_attribution"] = nlohmann::json::array();
      for (int l = 0; l < L; l++) {
        j["heads_by_position"].push_back(rows({r.heads_by_position.begin() + (std::ptrdiff_t)l * NH * T,
                                               r.heads_by_position.begin() + (std::ptrdiff_t)(l + 1) * NH * T},
                                              NH, T));
        j["heads_by_position_attribution"].push_back(
            rows({r.heads_by_position_attribution.begin() + (std::ptrdiff_t)l * NH * T,
                  r.heads_by_position_attribution.begin() + (std::ptrdiff_t)(l + 1) * NH * T},
                 NH, T));
      }
    }
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("%d tokens, first differing at %d; answer \"%s\", distractor \"%s\"; LD clean %.4f, corrupted %.4f\n", T,
              r.first_difference, tok.token_display(r.answer).c_str(), tok.token_display(r.distractor).c_str(),
              r.ld_clean, r.ld_corrupted);
  std::printf("head     patched  attribution\n");
  for (int i = 0; i < L * NH; i++)
    std::printf("L%dH%-4d %+8.4f  %+8.4f\n", i / NH, i % NH, r.heads[i], r.heads_attribution[i]);
  return 0;
}

}  // namespace

int patch_command(int argc, char** argv) {
  return command_main(argc, argv, kPatchUsage, [&] { return run_patch(parse(argc, argv)); });
}

}  // namespace headscope::cli
