"""``ichor completion bash|zsh``: a completion script built from the parser, so it never lags the verbs."""

from __future__ import annotations

import argparse

BASH = """\
# ichor completion for bash: eval "$(ichor completion bash)"
_ichor() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} cmd="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in
            --home) ((i++)) ;;
            -*) ;;
            *) cmd=${{COMP_WORDS[i]}}; break ;;
        esac
    done
    case $cmd in
{cases}
        *) COMPREPLY=($(compgen -W "{commands} --home --version --help" -- "$cur")) ;;
    esac
}}
complete -o default -F _ichor ichor
"""

ZSH = """\
#compdef ichor
# ichor completion for zsh: eval "$(ichor completion zsh)"
_ichor() {{
    local -a commands
    commands=(
{described}
    )
    if (( CURRENT == 2 )); then
        _describe 'ichor command' commands
        return
    fi
    case $words[2] in
{cases}
    esac
}}
compdef _ichor ichor
"""


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(sub: argparse.ArgumentParser) -> list[str]:
    return sorted(o for a in sub._actions for o in a.option_strings if o.startswith("--"))


def subcommand_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each sub-command's one-line help, as ``--help`` shows it."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: (a.help or "").replace("%%", "%") for a in action._choices_actions}


def bash_script(parser: argparse.ArgumentParser) -> str:
    subs = _commands(parser)
    cases = "\n".join(
        f'        {name}) COMPREPLY=($(compgen -W "{" ".join(_options(sub))}" -- "$cur")) ;;'
        for name, sub in subs.items()
    )
    return BASH.format(cases=cases, commands=" ".join(subs))


def zsh_script(parser: argparse.ArgumentParser) -> str:
    subs, helps = _commands(parser), subcommand_helps(parser)
    described = "\n".join(f"        '{name}:{helps.get(name, '').replace(chr(39), '')}'" for name in subs)
    cases = "\n".join(
        f"        {name}) _arguments {' '.join(_options(sub))} '*: :_files' ;;" for name, sub in subs.items()
    )
    return ZSH.format(described=described, cases=cases)


def _run(args) -> int:
    from . import build_parser

    parser = build_parser()
    print(bash_script(parser) if args.shell == "bash" else zsh_script(parser), end="")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash or zsh)",
        description='Prints a completion script. bash: eval "$(ichor completion bash)" in ~/.bashrc; '
        'zsh: eval "$(ichor completion zsh)" in ~/.zshrc.',
    )
    p.add_argument("shell", choices=("bash", "zsh"))
    p.set_defaults(func=_run)
