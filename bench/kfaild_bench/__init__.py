"""kfaild's benchmarks, run by bench/run-all (its usage is cli.py's docstring).

settings.Settings holds every path, port and choice a run needs and is passed to what needs it;
no module keeps state of its own. The arithmetic on what was measured (percentiles, means, CPU
per message, the windows' differences) is in stats.py and beside each part as plain functions on
plain data, which bench/tests checks.
"""
