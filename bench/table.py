"""Markdown tables as the benchmark scripts print them: each row is flushed when it is
measured, so a long run shows its progress and a cut-off run keeps its finished rows."""


def header(*columns: str) -> None:
    """The header row and its separator."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def row(*cells) -> None:
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)
