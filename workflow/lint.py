"""`snakemake --lint` less its "Specify a conda environment or container for each rule" lint (`make lint`, tests).

The rules deliberately name no conda environment or container: environment.yml is for creating a conda env by
hand (see docs/environment.md). Every other lint still counts; the exit status is snakemake's.
Usage: python workflow/lint.py [snakemake options, e.g. -s Snakefile --directory .]
"""

import sys

from snakemake.cli import main
from snakemake.linting.rules import RuleLinter

del RuleLinter.lint_missing_software_definition  # fails loudly if a Snakemake release renames it

if __name__ == "__main__":
    main(["--lint", *sys.argv[1:]])
