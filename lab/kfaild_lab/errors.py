"""The two ways a verb fails: LabError (exit code 1) and UsageError (exit code 2)."""


class LabError(Exception):
    """A failure the user can act on: printed as `lab: <message>`, exit code 1."""


class UsageError(Exception):
    """Bad input: usage message, exit code 2."""
