"""nbgrader plug-ins for grading student code that the grader does not trust (named in nbgrader_config.py).

Plain `nbgrader autograde` and `python -m perfaudit.grade` use these same modules:

submission.py  a submitted folder may hold regular files only; the grader reads it here and nowhere else
refuse_unsafe_submission.py  the first autograde step: a submission holding anything else is not graded
execute.py     TrustedExecute: student cells run once in a sandboxed kernel, test cells run in the grader
kernel.py      the kernel manager: bubblewrap, a scratch folder in memory, raw output captured, memory limit
kernel_fate.py whose doing a kernel's end was, and whether its notebook runs once more (both graders)
sandbox.py     the bubblewrap command line and its refusal without a sandbox
limits.py      SandboxLimits: the one Configurable for a submission's limits
memory.py      all of a submission's processes within one memory limit (a cgroup, or a watchdog)
statefolder.py where grading keeps its own files: autograded/.batch-grading/, records beside the gradebook
channel.py     the grader's side of the channel to the kernel: plain data, checked on arrival
agent.py       the kernel's side: answers the grader's questions about the student's objects
protocol.py    what crosses between the two: requests, tagged values, folders, prompts, and every limit
verdicts.py    a test cell run in the grader, its outputs made by the grader, its names from source/
instruments.py the grader's jit: calls timed by the grader's clock, per function, output and JAXPR read back
made_up.py     evidence made up at grading time for hidden tests, and the folders made for them
measured.py    evidence checked against the grader's clock (gather_evidence, run_audit, time_stages)
audit_evidence.py  notebook 5's audit judged on the grader's data, answer key and clock
hidden.py      what hidden tests use that a student's copy never holds (`from perfaudit.autograde import hidden`)
versions.py    the versions a grading run graded with, against the pins
canary.py      the environment check: a broken grading environment stops grading, never scores students 0
envrecord.py   the environment check's record, kept for a fingerprint of everything its verdict depends on
oomlog.py      the kernel log's OOM kills: which process the machine's OOM killer chose, and why
proctree.py    a process tree as /proc shows it, for the memory watchdog
products.py    a short fingerprint of what each ahead-of-time stage of JAX made (the grader's jit sends it)
drop_duplicate_ids.py  nbgrader's DeduplicateIds, without failing a notebook that has a duplicated cell
hide_hidden_tests.py   generate_feedback without hidden-test source or tracebacks
hide_outputs_after_tests.py  feedback without the outputs of cells that ran after the first test
sanitize_outputs.py  student outputs and markdown as inert text or sanitized HTML (autograded/, feedback)
"""
