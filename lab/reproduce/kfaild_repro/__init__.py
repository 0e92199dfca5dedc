"""The reproduction of the broker-failure article behind `lab/reproduce/reproduce`.

Modules, each depending only on those above it:
  settings  paths, the drill plan's labels, the article's figures, the probe settings kfaild sets
  drills    kfaild's HTTP API: the scenario, running and saving the drills
  results   the saved drills read back, and the figures and cells of the report
  report    docs/REPRODUCTION.md
  chart     docs/reproduction-stalls.png (matplotlib, in its own venv)
  versions  the commit, the tree and the binary a run measured
"""
