# The Lua-sandbox escape suite (issue 22): each reproduction in tests/lua/escapes must end with a message and an exit
# status, never a crash, a hang or a success. Included by tests/cli/CMakeLists.txt (TL = the tilelab executable);
# the tests run in its build folder, the current directory the sandbox lets scripts write under.
set(TL_ESC ${PROJECT_SOURCE_DIR}/tests/lua/escapes)
set(TL_ESC_OUTSIDE ${CMAKE_BINARY_DIR}/tests/escape_outside)
add_test(NAME lua.escape.bytecode COMMAND ${TL} run ${TL_ESC}/bytecode.lua)
set_tests_properties(lua.escape.bytecode PROPERTIES PASS_REGULAR_EXPRESSION "bytecode refused" LABELS cpu)
add_test(NAME lua.escape.bytecode_script COMMAND sh -c "printf '\\033LuaT\\000\\031\\223' > escape_script.luac; ${TL} run escape_script.luac 2>&1; echo exit=$?")
set_tests_properties(lua.escape.bytecode_script PROPERTIES
  PASS_REGULAR_EXPRESSION "escape_script.luac: attempt to load a binary chunk \\(mode is 't'\\)\nexit=1" LABELS cpu)
add_test(NAME lua.escape.debug COMMAND ${TL} run ${TL_ESC}/debug_library.lua)
set_tests_properties(lua.escape.debug PROPERTIES PASS_REGULAR_EXPRESSION "debug library refused" LABELS cpu)
add_test(NAME lua.escape.sethook COMMAND sh -c "${TL} run --timeout 1 --max-instructions 1000000 ${TL_ESC}/sethook.lua 2>&1; echo exit=$?")
set_tests_properties(lua.escape.sethook PROPERTIES PASS_REGULAR_EXPRESSION
  "sethook.lua:4: the script ran past its (instruction budget|time limit).*exit=1" LABELS cpu TIMEOUT 30)
add_test(NAME lua.escape.metatables COMMAND ${TL} run ${TL_ESC}/metatables.lua)
set_tests_properties(lua.escape.metatables PROPERTIES PASS_REGULAR_EXPRESSION "metatables protected" LABELS cpu)
add_test(NAME lua.escape.finalizers COMMAND ${TL} run --unsafe ${TL_ESC}/finalizers.lua)
set_tests_properties(lua.escape.finalizers PROPERTIES PASS_REGULAR_EXPRESSION "finalizers idempotent" LABELS cpu)
# Finalizers run with Lua's hooks off: the sandbox refuses a __gc metatable (the suite), and the script that hung
# tilelab past --timeout (a __gc looping forever, run when the state closes) now stops at setmetatable.
add_test(NAME lua.escape.finalizer_loop COMMAND ${TL} run --timeout 2 ${TL_ESC}/finalizer_loop.lua)
set_tests_properties(lua.escape.finalizer_loop PROPERTIES PASS_REGULAR_EXPRESSION "finalizers refused" LABELS cpu TIMEOUT 30)
add_test(NAME lua.escape.finalizer_hang COMMAND sh -c "echo 'setmetatable({}, {__gc = function() while true do end end}) print(\"script done\")' > finalizer_hang.lua; ${TL} run --timeout 2 finalizer_hang.lua 2>&1; echo exit=$?")
set_tests_properties(lua.escape.finalizer_hang PROPERTIES PASS_REGULAR_EXPRESSION
  "finalizer_hang.lua:1: setmetatable: a __gc finalizer is disabled in the sandbox.*exit=1" FAIL_REGULAR_EXPRESSION "script done"
  LABELS cpu TIMEOUT 30)
# The default --max-memory (2048 MiB) stops 256 MiB strings at the 8th; the script reports it if it got 12.
add_test(NAME lua.escape.memory COMMAND sh -c "${TL} run ${TL_ESC}/memory.lua 2>&1; echo exit=$?")
set_tests_properties(lua.escape.memory PROPERTIES PASS_REGULAR_EXPRESSION
  "memory.lua: not enough memory: the script ran past its memory limit \\(--max-memory 2048 MiB; raise it with --max-memory N\\)\nexit=1"
  FAIL_REGULAR_EXPRESSION "no memory limit" LABELS cpu TIMEOUT 60)
add_test(NAME lua.escape.memory_pcall COMMAND sh -c "${TL} run --max-memory 64 ${TL_ESC}/memory_pcall.lua 2>&1; echo exit=$?")
set_tests_properties(lua.escape.memory_pcall PROPERTIES PASS_REGULAR_EXPRESSION
  "memory_pcall.lua:8: not enough memory: the script ran past its memory limit \\(--max-memory 64 MiB.*stack traceback.*exit=1"
  LABELS cpu TIMEOUT 30)
add_test(NAME lua.escape.json COMMAND ${TL} run ${TL_ESC}/json_depth.lua)
set_tests_properties(lua.escape.json PROPERTIES PASS_REGULAR_EXPRESSION "json depth refused" LABELS cpu)
# Writes: a folder outside the current directory, reached directly, through `..` and through a symbolic link.
set(TL_ESC_SETUP "rm -rf escape_writes escape_link ${TL_ESC_OUTSIDE} && mkdir -p ${TL_ESC_OUTSIDE} && printf keep > ${TL_ESC_OUTSIDE}/keep.txt && ln -s ${TL_ESC_OUTSIDE} escape_link")
add_test(NAME lua.escape.writes COMMAND sh -c "${TL_ESC_SETUP} && ${TL} run ${TL_ESC}/writes.lua ${TL_ESC_OUTSIDE} refused")
set_tests_properties(lua.escape.writes PROPERTIES PASS_REGULAR_EXPRESSION "writes outside refused" LABELS cpu
                     RESOURCE_LOCK lua_escape_writes)
add_test(NAME lua.escape.writes_allowed COMMAND sh -c "${TL_ESC_SETUP} && ${TL} run --allow-write ${TL_ESC_OUTSIDE} ${TL_ESC}/writes.lua ${TL_ESC_OUTSIDE} allowed")
set_tests_properties(lua.escape.writes_allowed PROPERTIES PASS_REGULAR_EXPRESSION "writes under --allow-write allowed"
                     LABELS cpu RESOURCE_LOCK lua_escape_writes)
add_test(NAME lua.escape.options COMMAND sh -c "for o in '--timeout -5' '--max-instructions -1' '--max-memory 0' '--launch-timeout -1'; do ${TL} run $o ${PROJECT_SOURCE_DIR}/tests/lua/ok.lua 2>&1; echo exit=$?; done")
set_tests_properties(lua.escape.options PROPERTIES PASS_REGULAR_EXPRESSION
  "--timeout -5: must be a number of seconds >= 0 \\(0: no limit\\)\nexit=1\n.*--max-instructions -1: must be a count >= 0 \\(0: no limit\\)\nexit=1\n.*--max-memory 0: must be from 16 to 1048576 MiB\nexit=1\n.*--launch-timeout -1: must be a number of seconds above 0, at most 86400\nexit=1\n$"
  LABELS cpu)
add_test(NAME lua.escape.tostring_error COMMAND sh -c "${TL} run ${TL_ESC}/tostring_error.lua 2>&1; echo exit=$?")
set_tests_properties(lua.escape.tostring_error PROPERTIES PASS_REGULAR_EXPRESSION
  "tostring_error.lua:3: custom failure: the widget broke\nstack traceback:.*tostring_error.lua:4: in main chunk.*exit=1" LABELS cpu)
# Ctrl-C after 4 s of a sweep that needs far longer (14 gemm.mma compiles, a fresh kernel cache): exit 130, the store holds exactly the
# points the sweep reported stored, and the script did not go on.
add_test(NAME lua.escape.sweep_interrupt COMMAND sh -c "rm -rf escape_sweep && mkdir escape_sweep && \
  timeout --foreground --preserve-status -s INT 4 ${TL} run --cache-dir escape_sweep/cache --db escape_sweep/r.db ${TL_ESC}/sweep_interrupt.lua > escape_sweep/log 2>&1; \
  echo exit=$?; cat escape_sweep/log; ${TL} run --db escape_sweep/r.db ${TL_ESC}/sweep_rows.lua $(grep -c '^stored' escape_sweep/log)")
set_tests_properties(lua.escape.sweep_interrupt PROPERTIES PASS_REGULAR_EXPRESSION
  "exit=130\n.*tl.sweep: interrupted \\(Ctrl-C\\) after [0-9]+ of 112 points.*store holds the [0-9]+ reported rows"
  FAIL_REGULAR_EXPRESSION "the script went on" LABELS cpu TIMEOUT 120)
# os.exit: the script ends with the status (3) it asked for, through a pcall, after the run's cleanup; os.exit(true)
# is 0. The process going on after it (what keeps the desktop app up) is test_lua's LuaSandbox.OsExitEndsTheScriptNotTheProcess.
add_test(NAME lua.escape.exit COMMAND sh -c "${TL} run ${TL_ESC}/exit.lua 2>&1; echo exit=$?; echo 'os.exit(true)' > exit_true.lua; ${TL} run exit_true.lua; echo exit=$?")
set_tests_properties(lua.escape.exit PROPERTIES PASS_REGULAR_EXPRESSION "^exit=3\nexit=0\n$" LABELS cpu)
# tl.results reads the store read-only: a query on a store that is not there says so and creates no file.
add_test(NAME lua.results_query_creates_nothing COMMAND sh -c "rm -f nowhere.db; echo 'tl.results.query{}' > query.lua; ${TL} run --db nowhere.db query.lua 2>&1; echo exit=$?; ls nowhere.db 2>&1")
set_tests_properties(lua.results_query_creates_nothing PROPERTIES
  PASS_REGULAR_EXPRESSION "no results store at nowhere.db.*exit=1\nls: cannot access 'nowhere.db'" LABELS cpu)
