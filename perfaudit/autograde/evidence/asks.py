"""What the grader's instruments ask on the kernel's stdin, each prompt "<word> <number> <details...>" (written and
read by perfaudit/autograde/wire/protocol.py's prompt and read_prompt): the instruments' words, which the wire
carries. Kept free of imports: the kernel's side of the wire imports it too."""

ASK_CALL = "perfaudit-call"  # a call arrived (a slow function's, or a function the grader's jit made)
ASK_READY = "perfaudit-ready"  # the student's code waits on a result
ASK_POLL = "perfaudit-poll"  # it asks, never waiting, whether a result is ready (is_ready()): answered "1" once it is
ASK_JIT = "perfaudit-jit"  # the grader's jit made a function
ASK_TRACED = "perfaudit-traced"  # JAX traced one
ASK_FED = "perfaudit-fed"  # a loop returned: which of the grader's batches reached the functions its jit made
ASK_STAGE_BEGIN = "perfaudit-stage-begin"  # an ahead-of-time stage of one begins: the stage
ASK_STAGE = "perfaudit-stage"  # JAX did an ahead-of-time stage of one: the stage, a fingerprint of what it made
ASK_RUN = "perfaudit-run"  # a program compile() returned runs (answered: the run, the seed of its entries' places)
ASK_RUN_READY = "perfaudit-run-ready"  # the student's code waits on a run's result: the run, entries of its output
