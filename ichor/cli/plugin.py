"""``ichor install-plugin``: put ichor in a Hermes home's plugin folder."""

from __future__ import annotations

import argparse

from .common import CliError

HELP = "install ichor as a directory plugin under $HERMES_HOME/plugins/ichor"
DESCRIPTION = """\
Write $HERMES_HOME/plugins/ichor/ (plugin.yaml and a loader that imports the installed ichor
package). The ichor package must be installed in the same Python environment as Hermes
(pip install hermes-ichor, or pip install -e . from a checkout). Then turn it on with:

  hermes plugins enable ichor

A pip install alone already registers ichor through the hermes_agent.plugins entry point;
use this command when you want a visible plugin folder, or a profile-specific install."""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "install-plugin", help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--home",
        dest="plugin_home",
        metavar="PATH",
        help="Hermes home (profile) to install into; default --home, $HERMES_HOME or ~/.hermes",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing, different plugin folder")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..hermes.install import InstallError, install_plugin

    home = getattr(args, "plugin_home", None) or getattr(args, "home", None)
    try:
        target = install_plugin(home, force=args.force)
    except (InstallError, OSError) as exc:
        raise CliError(str(exc)) from None
    print(f"ichor: installed the Hermes plugin in {target}")
    print("next: hermes plugins enable ichor   (ichor must be importable in Hermes' Python environment)")
    return 0
