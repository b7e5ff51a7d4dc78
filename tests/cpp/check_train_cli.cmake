# `headscope train` end to end (CLI = the tool, FIXTURES = tests/fixtures/train, WORK = a scratch folder):
#  1. --init the golden model, --batch its batch, SGD lr 1, 1 step: the logged loss is PyTorch's (golden),
#     the output folder opens in `headscope run`;
#  2. a fresh --config model on --task induction: one JSON line per logged step, a folder that runs;
#  3. bad input: ragged batch, out-of-range id, diverging lr, --init not a model, a too-large shape.
#     Each exits non-zero with a message on stderr naming the problem, and writes nothing;
#  4. --task text:FILE with a fixture model's tokenizer (TINY), and empty or too-short texts.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/init)
file(COPY_FILE ${FIXTURES}/config.json ${WORK}/init/config.json)
file(COPY_FILE ${FIXTURES}/golden.safetensors ${WORK}/init/model.safetensors)

function(expect_ok out_var)
  execute_process(COMMAND ${CLI} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "headscope ${ARGN}\nfailed (${rc}): ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_error pattern)
  execute_process(COMMAND ${CLI} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0 OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "headscope ${ARGN}\nexpected a non-zero exit and a message matching '${pattern}'; got ${rc}, '${err}'")
  endif()
  if(EXISTS ${WORK}/bad)
    message(FATAL_ERROR "headscope ${ARGN}\nfailed but wrote ${WORK}/bad")
  endif()
endfunction()

# 1. the golden batch through the CLI: the loss of step 1 is computed before the update, so it is the
#    golden loss (3.117988, PyTorch float64); same 1e-6 relative tolerance as test_train_golden.cpp
expect_ok(out train --init ${WORK}/init --batch ${FIXTURES}/batch.json --optimizer sgd --lr 1 --steps 1 --out ${WORK}/sgd)
string(REGEX MATCH "^[^\n]*" line1 "${out}")
string(JSON step GET "${line1}" step)
string(JSON golden_loss GET "${line1}" loss)
if(NOT step EQUAL 1 OR golden_loss LESS 3.117985 OR golden_loss GREATER 3.117991)
  message(FATAL_ERROR "golden batch: expected step 1 with loss 3.117988 (PyTorch), got '${line1}'")
endif()
foreach(f config.json model.safetensors vocab.json merges.txt)
  if(NOT EXISTS ${WORK}/sgd/${f})
    message(FATAL_ERROR "train --out: ${f} missing")
  endif()
endforeach()
expect_ok(out info --model ${WORK}/sgd)

# 2. a fresh model on the induction task, logging every 2 of 6 steps
file(WRITE ${WORK}/cfg.json [[{"n_layer": 2, "n_head": 2, "n_embd": 16, "n_positions": 32, "vocab_size": 12}]])
expect_ok(out train --config ${WORK}/cfg.json --task induction --steps 6 --log-every 2 --batch-size 4 --seq-len 24
          --lr 1e-2 --weight-decay 0.1 --clip 1 --seed 3 --out ${WORK}/ind)
string(REGEX MATCHALL "{\"step\"[^\n]*" lines "${out}")
list(LENGTH lines n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "induction: expected 3 JSON step lines, got ${n}: ${out}")
endif()
foreach(l ${lines})
  string(JSON tps GET "${l}" tokens_per_s)
  string(JSON loss GET "${l}" loss)
  if(NOT tps GREATER 0 OR NOT loss GREATER 0)
    message(FATAL_ERROR "induction: bad step line '${l}'")
  endif()
endforeach()
expect_ok(out run --model ${WORK}/ind --text "!\"#$!\"#$" --json)
string(JSON nlayers LENGTH "${out}" attention)
if(NOT nlayers EQUAL 2)
  message(FATAL_ERROR "the trained folder did not run: ${out}")
endif()

# 3. bad input
file(WRITE ${WORK}/ragged.json "[[1, 2, 3], [4, 5]]")
expect_error("ragged rows: row 1 has 2 ids, row 0 has 3" train --init ${WORK}/init --batch ${WORK}/ragged.json --steps 1 --out ${WORK}/bad)
file(WRITE ${WORK}/range.json "[[1, 2, 23]]")
expect_error("row 0, position 2: 23 is not a token id in \\[0, 23\\)" train --init ${WORK}/init --batch ${WORK}/range.json --steps 1 --out ${WORK}/bad)
expect_error("training diverged" train --init ${WORK}/init --batch ${FIXTURES}/batch.json --optimizer sgd --lr 1e30 --steps 3 --out ${WORK}/bad)
expect_error("is not a model folder" train --init ${WORK} --batch ${FIXTURES}/batch.json --steps 1 --out ${WORK}/bad)
file(WRITE ${WORK}/huge.json [[{"n_layer": 48, "n_head": 16, "n_embd": 4096, "n_positions": 1024, "vocab_size": 50257}]])
expect_error("MiB" train --config ${WORK}/huge.json --task induction --steps 1 --batch-size 8 --seq-len 1024 --out ${WORK}/bad)
expect_error("exceeds the model's n_positions" train --config ${WORK}/cfg.json --task induction --steps 1 --seq-len 33 --out ${WORK}/bad)
message(STATUS "headscope train: golden loss ${golden_loss}, induction run and 6 bad inputs ok")

# 4. --task text:FILE with the byte-level tokenizer of a fixture model; empty and too-short texts
file(WRITE ${WORK}/text.txt "The chef, who trained in Paris, cooked the meal quickly. The chef cooked the meal again.")
expect_ok(out train --init ${TINY} --task text:${WORK}/text.txt --steps 4 --batch-size 2 --seq-len 16 --lr 1e-2 --out ${WORK}/text)
expect_ok(out run --model ${WORK}/text --text "The chef")
file(WRITE ${WORK}/empty.txt "")
expect_error("the text is empty" train --init ${TINY} --task text:${WORK}/empty.txt --steps 1 --out ${WORK}/bad)
file(WRITE ${WORK}/short.txt "short")
expect_error("the text is too short: 5 tokens, a window needs T\\+1 = 17" train --init ${TINY} --task text:${WORK}/short.txt --steps 1 --seq-len 16 --out ${WORK}/bad)
message(STATUS "headscope train --task text: ok")
