"""python -m perfaudit.serve: grade each submission from nbgrader's exchange as it arrives, with a fair limit.

__main__.py  the command line: options, --status
settings.py  GradingService: the limit, the poll interval, the owner check (nbgrader_config.py)
readiness.py whether this account can run what the service runs (--check, and each start), in one line
ledger.py    every submission the service has seen and what became of it, one JSON file beside the gradebook
exchange.py  the exchange's inbound (what arrived, from whom), collect into submitted/, release feedback
notes.py     the feedback pages the service writes itself: limited, could not be graded, being repaired
limits_notes.py  what the hub's limits service did to a student (a process stopped), told on their next page
errors.py    every exception the service raises, in one place
service.py   the loop: notice, decide, collect, grade on Dask (perfaudit/grade/task.py), write, release
"""
