# Runs the CLI with --json on a fixture model and checks stdout is one JSON document of the
# documented shape; then checks that a bad model folder gives a non-zero exit and a message.
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef, who trained in Paris, cooked the meal quickly." --json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "CLI failed (${rc}): ${err}")
endif()
string(JSON ntok LENGTH "${out}" tokens)
string(JSON nids LENGTH "${out}" ids)
string(JSON nlogits LENGTH "${out}" logits_last)
string(JSON nlayers LENGTH "${out}" attention)
string(JSON nheads LENGTH "${out}" attention 0)
string(JSON nrows LENGTH "${out}" attention 0 0)
string(JSON ncols LENGTH "${out}" attention 0 0 0)
string(JSON config_json_unused ERROR_VARIABLE e0 GET "${out}" tokens 0)
file(READ ${MODEL}/config.json cfg)
string(JSON V GET "${cfg}" vocab_size)
string(JSON L GET "${cfg}" n_layer)
string(JSON H GET "${cfg}" n_head)
if(NOT ntok EQUAL nids OR NOT nrows EQUAL ntok OR NOT ncols EQUAL ntok OR NOT nlogits EQUAL V OR NOT nlayers EQUAL L OR NOT nheads EQUAL H)
  message(FATAL_ERROR "unexpected JSON shape: tokens ${ntok} ids ${nids} logits ${nlogits} (V ${V}) layers ${nlayers} (${L}) heads ${nheads} (${H}) rows ${nrows} cols ${ncols}")
endif()
# no --inspect: no "inside" key (the document is unchanged)
string(JSON no_inside ERROR_VARIABLE no_inside_err GET "${out}" inside)
if(NOT no_inside_err)
  message(FATAL_ERROR "without --inspect the document must not hold \"inside\"")
endif()
# --inspect L:H adds "inside" with the head's q, k, v ([T][HS]), scores (null above the diagonal),
# attention, z, out ([T][C]) and value_norm ([T]); its attention is the document's own map
math(EXPR last_layer "${L} - 1")
math(EXPR last_head "${H} - 1")
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef, who trained in Paris, cooked the meal quickly." --json
                        --inspect ${last_layer}:${last_head}
                OUTPUT_VARIABLE io ERROR_VARIABLE ierr RESULT_VARIABLE irc)
if(NOT irc EQUAL 0)
  message(FATAL_ERROR "--inspect failed (${irc}): ${ierr}")
endif()
file(READ ${MODEL}/config.json cfg_for_hs)
string(JSON C GET "${cfg_for_hs}" n_embd)
math(EXPR HS "${C} / ${H}")
string(JSON il GET "${io}" inside layer)
string(JSON ih GET "${io}" inside head)
string(JSON nq LENGTH "${io}" inside q)
string(JSON nq0 LENGTH "${io}" inside q 0)
string(JSON nout0 LENGTH "${io}" inside out 0)
string(JSON nvn LENGTH "${io}" inside value_norm)
string(JSON masked TYPE "${io}" inside scores 0 1)
string(JSON diag TYPE "${io}" inside scores 1 1)
string(JSON a_in GET "${io}" inside attention 1 0)
string(JSON a_doc GET "${io}" attention ${last_layer} ${last_head} 1 0)
if(NOT il EQUAL last_layer OR NOT ih EQUAL last_head OR NOT nq EQUAL ntok OR NOT nq0 EQUAL HS OR NOT nout0 EQUAL C
   OR NOT nvn EQUAL ntok OR NOT masked STREQUAL "NULL" OR NOT diag STREQUAL "NUMBER" OR NOT a_in STREQUAL a_doc)
  message(FATAL_ERROR "--inspect: unexpected \"inside\": layer ${il} head ${ih} q ${nq}x${nq0} (T ${ntok}, HS ${HS}) out row ${nout0} (C ${C}) value_norm ${nvn} masked '${masked}' diagonal ${diag} attention ${a_in} vs ${a_doc}")
endif()
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "x" --inspect ${L}:0 --json
                OUTPUT_VARIABLE out3 ERROR_VARIABLE err3 RESULT_VARIABLE rc3)
if(rc3 EQUAL 0 OR NOT err3 MATCHES "layer ${L} is outside" OR NOT out3 STREQUAL "")
  message(FATAL_ERROR "--inspect out of range: expected an error naming the range; got ${rc3}, '${err3}'")
endif()
# headscope heads: --help, the --json document's shape, and clear errors
execute_process(COMMAND ${CLI} heads --help OUTPUT_VARIABLE hh RESULT_VARIABLE hrc)
if(NOT hrc EQUAL 0 OR NOT hh MATCHES "usage: headscope heads")
  message(FATAL_ERROR "headscope heads --help: ${hrc} '${hh}'")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/heads-text.txt "The chef, who trained in Paris, cooked the meal quickly.")
execute_process(COMMAND ${CLI} heads --model ${MODEL} --text-file ${CMAKE_CURRENT_BINARY_DIR}/heads-text.txt --random-orders 2 --json
                OUTPUT_VARIABLE hj ERROR_VARIABLE herr RESULT_VARIABLE hrc)
if(NOT hrc EQUAL 0)
  message(FATAL_ERROR "headscope heads failed (${hrc}): ${herr}")
endif()
math(EXPR nheads_all "${L} * ${H}")
math(EXPR ncurve "${nheads_all} + 1")
string(JSON g_l LENGTH "${hj}" gate_grad)
string(JSON g_h LENGTH "${hj}" gate_grad 0)
string(JSON d_l LENGTH "${hj}" ablation_delta)
string(JSON n_order LENGTH "${hj}" order)
string(JSON n_pruned LENGTH "${hj}" pruned_loss)
string(JSON n_mean LENGTH "${hj}" random_loss_mean)
string(JSON n_band LENGTH "${hj}" random_loss_band)
string(JSON band0 LENGTH "${hj}" random_loss_band 0)
string(JSON loss0 GET "${hj}" loss)
string(JSON pruned0 GET "${hj}" pruned_loss 0)
if(NOT g_l EQUAL L OR NOT g_h EQUAL H OR NOT d_l EQUAL L OR NOT n_order EQUAL nheads_all OR NOT n_pruned EQUAL ncurve
   OR NOT n_mean EQUAL ncurve OR NOT n_band EQUAL ncurve OR NOT band0 EQUAL 2 OR NOT loss0 STREQUAL pruned0)
  message(FATAL_ERROR "headscope heads --json: unexpected shape: ${hj}")
endif()
execute_process(COMMAND ${CLI} heads --model ${MODEL} --text-file ${CMAKE_CURRENT_BINARY_DIR}/missing.txt --json
                OUTPUT_VARIABLE o4 ERROR_VARIABLE e4 RESULT_VARIABLE r4)
if(r4 EQUAL 0 OR NOT e4 MATCHES "cannot open the text file" OR NOT o4 STREQUAL "")
  message(FATAL_ERROR "heads, missing text file: ${r4} '${e4}'")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/heads-empty.txt " \n")
execute_process(COMMAND ${CLI} heads --model ${MODEL} --text-file ${CMAKE_CURRENT_BINARY_DIR}/heads-empty.txt
                OUTPUT_VARIABLE o5 ERROR_VARIABLE e5 RESULT_VARIABLE r5)
if(r5 EQUAL 0 OR NOT e5 MATCHES "is empty")
  message(FATAL_ERROR "heads, empty text: ${r5} '${e5}'")
endif()
string(REPEAT "The chef cooked. " 40 long_text)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/heads-long.txt "${long_text}")
execute_process(COMMAND ${CLI} heads --model ${MODEL} --text-file ${CMAKE_CURRENT_BINARY_DIR}/heads-long.txt --random-orders 0 --json
                OUTPUT_VARIABLE o6 ERROR_VARIABLE e6 RESULT_VARIABLE r6)
string(JSON dropped6 GET "${o6}" dropped_tokens)
if(NOT r6 EQUAL 0 OR NOT e6 MATCHES "were cut to fit the context" OR dropped6 LESS 1)
  message(FATAL_ERROR "heads, long text: expected a note of what is cut and dropped_tokens; got ${r6} '${e6}' ${dropped6}")
endif()
# headscope generate --json: the prompt's ids, then N generated; the same seed gives the same ids
execute_process(COMMAND ${CLI} generate --model ${MODEL} --text "The chef" --tokens 5 --seed 9 --json
                OUTPUT_VARIABLE g1 ERROR_VARIABLE ge1 RESULT_VARIABLE gr1)
execute_process(COMMAND ${CLI} generate --model ${MODEL} --text "The chef" --tokens 5 --seed 9 --json
                OUTPUT_VARIABLE g2 RESULT_VARIABLE gr2)
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef" --json OUTPUT_VARIABLE gp)
string(JSON ng LENGTH "${g1}" generated)
string(JSON nall LENGTH "${g1}" ids)
string(JSON np LENGTH "${gp}" ids)
string(JSON first GET "${g1}" ids 0)
string(JSON first_prompt GET "${gp}" ids 0)
math(EXPR want_all "${np} + 5")
if(NOT gr1 EQUAL 0 OR NOT gr2 EQUAL 0 OR NOT ng EQUAL 5 OR NOT nall EQUAL want_all OR NOT first EQUAL first_prompt OR NOT g1 STREQUAL g2)
  message(FATAL_ERROR "headscope generate --json: ${gr1} '${ge1}' '${g1}' vs '${g2}' (prompt ids ${np})")
endif()
execute_process(COMMAND ${CLI} generate --model ${MODEL} --text "x" --tokens 2 --top-p 1.5
                OUTPUT_VARIABLE g3 ERROR_VARIABLE ge3 RESULT_VARIABLE gr3)
if(gr3 EQUAL 0 OR NOT ge3 MATCHES "top-p must be within")
  message(FATAL_ERROR "headscope generate --top-p 1.5: expected an error naming the range; got ${gr3} '${ge3}'")
endif()
# headscope explain --json: a P x P table and its contrast; a key after the query and a layer out of
# range are errors with messages (the numbers: test_explain.cpp and tests/js/package/explain.test.js)
execute_process(COMMAND ${CLI} explain --model ${MODEL} --text "The chef cooked" --head 1:2 --query 5 --key 2 --json
                OUTPUT_VARIABLE x1 ERROR_VARIABLE xe1 RESULT_VARIABLE xr1)
if(NOT xr1 EQUAL 0)
  message(FATAL_ERROR "headscope explain --json: ${xr1} '${xe1}'")
endif()
string(JSON nparts LENGTH "${x1}" components)
string(JSON nrows LENGTH "${x1}" table)
string(JSON ncols LENGTH "${x1}" contrast table 0)
string(JSON against GET "${x1}" contrast against)
if(NOT nparts EQUAL nrows OR NOT nparts EQUAL ncols OR NOT against STREQUAL "mean")
  message(FATAL_ERROR "headscope explain --json: ${nparts} parts, ${nrows} rows, ${ncols} contrast columns, against ${against}")
endif()
execute_process(COMMAND ${CLI} explain --model ${MODEL} --text "The chef cooked" --head 1:2 --query 2 --key 5
                ERROR_VARIABLE xe2 RESULT_VARIABLE xr2)
execute_process(COMMAND ${CLI} explain --model ${MODEL} --text "The chef cooked" --head 7:0 --query 2 --key 1
                ERROR_VARIABLE xe3 RESULT_VARIABLE xr3)
if(xr2 EQUAL 0 OR NOT xe2 MATCHES "key 5 comes after query 2" OR xr3 EQUAL 0 OR NOT xe3 MATCHES "layer 7")
  message(FATAL_ERROR "headscope explain refusals: ${xr2} '${xe2}'; ${xr3} '${xe3}'")
endif()
# headscope circuits --json: an L x H copying table and (L H) x (L H) compositions
execute_process(COMMAND ${CLI} circuits --model ${MODEL} --seeds 2 --json OUTPUT_VARIABLE c1 ERROR_VARIABLE ce1
                RESULT_VARIABLE cr1)
string(JSON ncopy LENGTH "${c1}" copying)
string(JSON nq LENGTH "${c1}" composition Q)
string(JSON seeds GET "${c1}" seeds)
math(EXPR want_q "${nlayers} * ${nheads}")
if(NOT cr1 EQUAL 0 OR NOT ncopy EQUAL nlayers OR NOT nq EQUAL want_q OR NOT seeds EQUAL 2)
  message(FATAL_ERROR "headscope circuits --json: ${cr1} '${ce1}' copying ${ncopy}, Q ${nq}, seeds ${seeds}")
endif()
# --no-maps keeps no map: the document (maps recomputed from the key cache) is the same, byte for byte
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef, who trained in Paris, cooked the meal quickly." --json
                        --no-maps --inspect 1:2
                OUTPUT_VARIABLE nm ERROR_VARIABLE nme RESULT_VARIABLE nmr)
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef, who trained in Paris, cooked the meal quickly." --json
                        --inspect 1:2
                OUTPUT_VARIABLE wm RESULT_VARIABLE wmr)
if(NOT nmr EQUAL 0 OR NOT wmr EQUAL 0 OR NOT nm STREQUAL wm)
  message(FATAL_ERROR "headscope run --no-maps: ${nmr} '${nme}', or its document differs from the one with maps")
endif()
# --activations views keeps the views' alone: the same document without --inspect, and --inspect refused
# naming the option; info says what is kept
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef, who trained in Paris, cooked the meal quickly." --json
                        --activations views
                OUTPUT_VARIABLE av ERROR_VARIABLE ave RESULT_VARIABLE avr)
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef, who trained in Paris, cooked the meal quickly." --json
                OUTPUT_VARIABLE aa RESULT_VARIABLE aar)
execute_process(COMMAND ${CLI} run --model ${MODEL} --text "The chef" --json --activations views --inspect 1:2
                OUTPUT_VARIABLE ai ERROR_VARIABLE aie RESULT_VARIABLE air)
execute_process(COMMAND ${CLI} info --model ${MODEL} --activations auto --memory 512 OUTPUT_VARIABLE ainfo
                RESULT_VARIABLE ainfor)
execute_process(COMMAND ${CLI} info --model ${MODEL} --activations some ERROR_VARIABLE abad RESULT_VARIABLE abadr)
if(NOT avr EQUAL 0 OR NOT aar EQUAL 0 OR NOT av STREQUAL aa OR air EQUAL 0
   OR NOT aie MATCHES "looking inside a head needs every layer's activations.*activations \"views\""
   OR NOT ainfor EQUAL 0 OR NOT ainfo MATCHES "activations kept: auto \\(every layer's up to [0-9]+ tokens"
   OR abadr EQUAL 0 OR NOT abad MATCHES "activations must be")
  message(FATAL_ERROR "headscope --activations: ${avr} '${ave}' (same document: views vs all); --inspect: ${air} '${aie}'; "
                      "info: ${ainfor} '${ainfo}'; bad value: ${abadr} '${abad}'")
endif()
# accuracy: 8-bit weights against float32 on a text; one JSON document naming the storage, with the loss
# of both and a KL divergence that is a number; --weights f32 refused (nothing to compare)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/accuracy-text.txt "The chef, who trained in Paris, cooked the meal quickly.")
execute_process(COMMAND ${CLI} accuracy --model ${MODEL} --text-file ${CMAKE_CURRENT_BINARY_DIR}/accuracy-text.txt --json
                OUTPUT_VARIABLE acc ERROR_VARIABLE acce RESULT_VARIABLE accr)
execute_process(COMMAND ${CLI} accuracy --model ${MODEL} --text-file ${CMAKE_CURRENT_BINARY_DIR}/accuracy-text.txt
                        --weights f32 ERROR_VARIABLE accbad RESULT_VARIABLE accbadr)
if(NOT accr EQUAL 0 OR NOT acc MATCHES "\"weights\":\"q8\"" OR NOT acc MATCHES "\"kl_mean\":[0-9.e-]+,"
   OR NOT acc MATCHES "\"loss_f32\":[0-9.]+" OR accbadr EQUAL 0 OR NOT accbad MATCHES "q8 or f16")
  message(FATAL_ERROR "headscope accuracy: ${accr} '${acc}' '${acce}'; --weights f32: ${accbadr} '${accbad}'")
endif()
execute_process(COMMAND ${CLI} run --model ${MODEL}/does-not-exist --text "x" --json
                OUTPUT_VARIABLE out2 ERROR_VARIABLE err2 RESULT_VARIABLE rc2)
if(rc2 EQUAL 0 OR NOT err2 MATCHES "not found" OR NOT out2 STREQUAL "")
  message(FATAL_ERROR "bad model folder: expected a non-zero exit, a message on stderr and nothing on stdout; got ${rc2}, '${err2}', '${out2}'")
endif()
message(STATUS "CLI JSON ok: ${ntok} tokens, ${nlayers} layers x ${nheads} heads, V ${V}")
