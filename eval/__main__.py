"""`python -m eval`: the evaluation commands (each is its own module)."""

COMMANDS = {
    "python -m eval.run": "put the benchmark's questions to a model (resumable, sharded); docs/eval.md",
    "python -m eval.merge RUN_DIR": "join the log parts of a run into responses.parquet, checking for gaps",
    "python -m eval.report RUN_DIR...": "tables and figures from one or more runs",
    "python -m eval.demo": "the offline demo behind `make demo` (placeholder images, untrained models)",
}

if __name__ == "__main__":
    width = max(map(len, COMMANDS))
    for command, what in COMMANDS.items():
        print(f"{command:<{width}}  {what}")
