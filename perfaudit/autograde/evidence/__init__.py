"""The grader's instruments for hidden tests: evidence made and measured by the grader, never taken on trust.

asks.py        the words the instruments ask on the kernel's stdin (the wire carries them)
instruments.py the grader's jit: calls timed by the grader's clock, per function, output and JAXPR read back
products.py    a short fingerprint of what each ahead-of-time stage of JAX made (the grader's jit sends it)
made_up.py     evidence made up at grading time for hidden tests, and the folders made for them
measured.py    evidence checked against the grader's clock (gather_evidence, run_audit, time_stages)
audit_evidence.py  notebook 5's audit judged on the grader's data, answer key, jit and clock
loop_jit.py    the grader's jit for a training loop: the traces it counts itself, a run from other weights
handed_out.py  the course's loops made anew from the grader's handout.py where they run, never the notebook's names
"""
