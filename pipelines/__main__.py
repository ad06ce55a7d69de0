from pipelines.cli import main

main(prog_name="python -m pipelines")
