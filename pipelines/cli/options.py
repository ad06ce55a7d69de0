"""The options and checks the commands share: one spelling, one default and one message for each.

* ``fail(message, code=2)``: one line on stderr (``Error: ...``, the user's text made printable) and exit.
* ``finite(lo, hi)``, ``in_range(Range)`` and ``non_negative``: click callbacks for numbers in a range (NaN never, +inf only
  where asked; the wording ``pipelines.vocabulary.ranges``').
* ``eta_knob_option``, ``beta_knob_option``: Zeus's knobs (``--eta-knob``, ``--beta-knob``), their defaults the vocabulary's
  (``DEFAULT_ETA``, ``DEFAULT_BETA``), checked before anything runs; ``gpu_option``: ``--gpu``, one GPU of the power trace,
  the reference GPU by default.
* ``scheduler_option``: ``--scheduler``, where the work runs; ``slurm_options`` and ``slurm_settings``: the ``--slurm-*`` options
  of ``--scheduler slurm``; ``note``: a progress line on stderr.
* ``AliasedCommand``: a command that also takes other spellings of its options (the Zeus artifact's ``--eta_knob``, the
  ``--eta`` of earlier releases), left out of ``--help``.

A bad value is a usage error: ``python -m pipelines`` prints it as one line naming the option, and exits with code 2.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

import click

from pipelines.scaleout.jobqueue import DEFAULT_JOBS, WALLTIME_FORMATS, SlurmError, SlurmOptions, check, check_walltime
from pipelines.scaleout.schedulers import SLURM
from pipelines.terminal import clip_input, printable
from pipelines.vocabulary import BETA_HELP, BETA_RANGE, DEFAULT_BETA, DEFAULT_ETA, ETA_HELP, ETA_RANGE, REFERENCE_GPU
from pipelines.vocabulary.ranges import Range

F = TypeVar("F", bound=Callable[..., Any])
Callback = Callable[[click.Context, click.Parameter, float | None], float | None]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``Error: <message>`` as one line on stderr (whitespace runs as one space, control characters escaped, quoted
    input cut to ``QUOTE_LIMIT`` characters: ``clip_input``); exit."""
    click.echo(f"Error: {clip_input(printable(' '.join(message.split())))}", err=True)
    sys.exit(code)


def finite(lo: float, hi: float, *, inf_ok: bool = False) -> Callback:
    """A click callback accepting values in [lo, hi] (NaN never; +inf only with ``inf_ok``); each of a ``multiple`` option's."""
    return in_range(Range(lo, hi, inf_ok=inf_ok))


def in_range(allowed: Range) -> Callback:
    """A click callback accepting values in ``allowed`` (``Range.problem`` words the others); each of a ``multiple`` option's."""

    def check_value(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
        for one in value if isinstance(value, tuple) else (value,):
            problem = None if one is None else allowed.problem(one)
            if problem is not None:
                raise click.BadParameter(problem)
        return value

    return check_value


def non_negative(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback accepting a finite number >= 0 (or no value)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value} is not a number >= 0")
    return value


def eta_knob_option(text: str = ETA_HELP) -> Callable[[F], F]:
    """``--eta-knob``: Zeus's eta, in [0, 1], ``DEFAULT_ETA`` by default; ``text``: its help."""
    return click.option("--eta-knob", type=float, default=DEFAULT_ETA, show_default=True, callback=in_range(ETA_RANGE), help=text)


def beta_knob_option() -> Callable[[F], F]:
    """``--beta-knob``: Zeus's beta, >= 1 or inf, ``DEFAULT_BETA`` by default."""
    return click.option("--beta-knob", type=float, default=DEFAULT_BETA, show_default=True, callback=in_range(BETA_RANGE), help=BETA_HELP)


def gpu_option(name: str = "--gpu", text: str = "GPU of the power trace.") -> Callable[[F], F]:
    """``--gpu`` (or ``name``): one GPU, ``REFERENCE_GPU`` by default; ``text``: its help."""
    return click.option(name, default=REFERENCE_GPU, show_default=True, help=text)


def scheduler_option(default: str | None, default_text: str) -> Callable[[F], F]:
    """``--scheduler``: where the work runs (``pipelines.scaleout.schedulers.connect``); ``default_text`` says what no value means."""
    return click.option(
        "--scheduler", default=default,
        help="Where the work runs: auto (in this process, or a LocalCluster where the first tasks' measured time says it is "
             "sooner; the choice is printed), none (in this process), local (a LocalCluster here, one worker per core), slurm "
             f"(workers as Slurm jobs: the --slurm-* options, the slurm extra) or a scheduler address (tcp://HOST:PORT)  "
             f"[default: {default_text}]",
    )


#: The options of a Slurm cluster (``--scheduler slurm``), by parameter name.
SLURM_PARAMS = ("slurm_queue", "slurm_account", "slurm_walltime", "slurm_cores", "slurm_memory", "slurm_job_extra", "slurm_jobs",
                "slurm_adapt")


def _walltime(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_walltime(value)
    except SlurmError as exc:
        raise click.UsageError(str(exc), ctx) from None


def slurm_options(command: F) -> F:
    """Add the options of ``--scheduler slurm`` (dask-jobqueue's SLURMCluster) to a click command; ``slurm_settings`` reads them."""
    given = "[default: Dask's config jobqueue.slurm]"
    for option in reversed((
        click.option("--slurm-queue", default=None, help=f"Slurm partition of the worker jobs (sbatch -p)  {given}"),
        click.option("--slurm-account", default=None, help=f"Account charged (sbatch -A)  {given}"),
        click.option("--slurm-walltime", default=None, callback=_walltime,
                     help=f"Time limit of each job: {WALLTIME_FORMATS}  {given}"),
        click.option("--slurm-cores", type=click.IntRange(min=1), default=None,
                     help=f"Cores per job, one single-threaded worker each  {given}"),
        click.option("--slurm-memory", default=None, help=f"Memory per job, e.g. 32GB  {given}"),
        click.option("--slurm-job-extra", multiple=True, help="One more #SBATCH directive, e.g. --slurm-job-extra=--constraint=skylake; "
                                                              "repeatable (added to jobqueue.slurm.job-extra-directives)"),
        click.option("--slurm-jobs", type=click.IntRange(min=1), default=None,
                     help=f"Jobs at most (adaptive) or exactly (--slurm-fixed)  [default: {DEFAULT_JOBS}]"),
        click.option("--slurm-adapt/--slurm-fixed", default=True, show_default=True,
                     help="Scale between 1 job and --slurm-jobs as the work asks, or hold --slurm-jobs jobs."),
    )):
        command = option(command)
    return command


def slurm_settings(scheduler: str | None, params: dict[str, Any]) -> SlurmOptions | None:
    """The ``SlurmOptions`` of ``--scheduler slurm`` (checked: the extra, sbatch, walltime, cores and memory), else None.

    A ``--slurm-*`` option without ``--scheduler slurm``, or a failed check, is a one-line usage error (exit code 2).
    """
    ctx = click.get_current_context()
    if scheduler != SLURM:
        given = [f"--{n.replace('_', '-')}" for n in SLURM_PARAMS
                 if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"{given[0]} needs --scheduler slurm", ctx)
        return None
    options = SlurmOptions(queue=params["slurm_queue"], account=params["slurm_account"], walltime=params["slurm_walltime"],
                           cores=params["slurm_cores"], memory=params["slurm_memory"], job_extra_directives=tuple(params["slurm_job_extra"]),
                           jobs=params["slurm_jobs"], adaptive=params["slurm_adapt"])
    try:
        check(options)
    except SlurmError as exc:
        raise click.UsageError(str(exc), ctx) from None
    return options


def note(line: str) -> None:
    """A progress line on stderr."""
    click.echo(line, err=True)


class AliasedCommand(click.Command):
    """A command that also takes other names of its options (``aliases``: alias -> option), without listing them in --help.

    ``--eta 0.3`` and ``--eta=0.3`` read as ``--eta-knob 0.3``; an error names the option as listed (``--eta-knob``). Only
    option names are read as aliases: an option's value (``--output --eta``) and whatever follows ``--`` are left as given.
    """

    def __init__(self, *args: Any, aliases: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = dict(aliases)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {name for p in self.params if isinstance(p, click.Option) and not (p.is_flag or p.count) for name in p.opts}
        out: list[str] = []
        value_next = False
        for n, arg in enumerate(args):
            if arg == "--" and not value_next:
                out.extend(args[n:])
                break
            name, sep, value = arg.partition("=")
            if value_next or name not in self.aliases:
                out.append(arg)
            else:
                name = self.aliases[name]
                out.append(name + sep + value)
            value_next = not value_next and not sep and name in takes_value
        return super().parse_args(ctx, out)
