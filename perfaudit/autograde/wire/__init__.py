"""The channel between the grader and the student's kernel: plain data both ways, checked on arrival.

channel.py     the grader's side of the channel to the kernel
agent.py       the kernel's side: answers the grader's questions about the student's objects (kept light: it is
               imported in the sandboxed kernel)
protocol.py    what crosses between the two: requests, tagged values, folders, prompts, and every limit
"""
